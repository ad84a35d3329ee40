package nodeagent

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func configObject(kind, name string, fields map[string]any) *object.Object {
	o := &object.Object{APIVersion: "v1", Kind: kind, Metadata: object.Meta{Name: name, Namespace: "ns"}, Fields: map[string]json.RawMessage{}}
	for k, v := range fields {
		_ = o.SetField(k, v)
	}
	return o
}

// prepare turns references into values and files, or names the first
// thing missing, never a value.
func TestPrepare(t *testing.T) {
	yes := true
	mode := int32(0o400)
	cfg := &bus.PodConfig{
		ConfigMaps: map[string]*object.Object{"app": configObject("ConfigMap", "app", map[string]any{
			"data": map[string]string{"greeting": "hello", "bad key": "x", "level": "debug"}, "binaryData": map[string]string{"blob": "AAE="}})},
		Secrets: map[string]*object.Object{"db": configObject("Secret", "db", map[string]any{
			"data": map[string]string{"password": "aHVudGVyMg=="}})},
	}
	base := kinds.PodSpec{NodeName: "n1", Containers: []kinds.Container{{Name: "c", Command: []string{"x"}}}}
	with := func(f func(*kinds.PodSpec)) kinds.PodSpec {
		s := base
		s.Containers = append([]kinds.Container(nil), base.Containers...)
		f(&s)
		return s
	}
	cases := []struct {
		name    string
		spec    kinds.PodSpec
		env     []kinds.EnvVar
		files   map[string]map[string]kinds.ProjectedFile
		failure string
	}{
		{name: "values", spec: with(func(s *kinds.PodSpec) {
			s.Containers[0].EnvFrom = []kinds.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &kinds.LocalRef{Name: "app"}}}
			s.Containers[0].Env = []kinds.EnvVar{{Name: "APP_LEVEL", Value: "info"},
				{Name: "PW", ValueFrom: &kinds.EnvVarSource{SecretKeyRef: &kinds.KeyRef{Name: "db", Key: "password"}}},
				{Name: "NODE", ValueFrom: &kinds.EnvVarSource{FieldRef: &kinds.FieldRef{FieldPath: "spec.nodeName"}}},
				{Name: "IP", ValueFrom: &kinds.EnvVarSource{FieldRef: &kinds.FieldRef{FieldPath: "status.podIP"}}},
				{Name: "GONE", ValueFrom: &kinds.EnvVarSource{ConfigMapKeyRef: &kinds.KeyRef{Name: "nope", Key: "a", Optional: &yes}}}}
		}), env: []kinds.EnvVar{{Name: "APP_blob", Value: "\x00\x01"}, {Name: "APP_greeting", Value: "hello"}, {Name: "APP_level", Value: "debug"},
			{Name: "APP_LEVEL", Value: "info"}, {Name: "PW", Value: "hunter2"}, {Name: "NODE", Value: "n1"}, {Name: "IP", Value: "10.0.0.1"}}},
		{name: "missing map", spec: with(func(s *kinds.PodSpec) {
			s.Containers[0].Env = []kinds.EnvVar{{Name: "A", ValueFrom: &kinds.EnvVarSource{ConfigMapKeyRef: &kinds.KeyRef{Name: "nope", Key: "a"}}}}
		}), failure: `configmap "nope" not found`},
		{name: "missing key", spec: with(func(s *kinds.PodSpec) {
			s.Containers[0].Env = []kinds.EnvVar{{Name: "A", ValueFrom: &kinds.EnvVarSource{SecretKeyRef: &kinds.KeyRef{Name: "db", Key: "user"}}}}
		}), failure: "couldn't find key user in Secret ns/db"},
		{name: "missing envFrom secret", spec: with(func(s *kinds.PodSpec) {
			s.Containers[0].EnvFrom = []kinds.EnvFromSource{{SecretRef: &kinds.LocalRef{Name: "other"}}}
		}), failure: `secret "other" not found`},
		{name: "volumes", spec: with(func(s *kinds.PodSpec) {
			s.Volumes = []kinds.Volume{{Name: "cfg", ConfigMap: &kinds.ConfigMapVolume{Name: "app", Items: []kinds.KeyToPath{{Key: "greeting", Path: "conf/hello.txt"}}}},
				{Name: "sec", Secret: &kinds.SecretVolume{SecretName: "db", DefaultMode: &mode}},
				{Name: "opt", Secret: &kinds.SecretVolume{SecretName: "nope", Optional: &yes}},
				{Name: "scratch", EmptyDir: &kinds.EmptyDirVolume{}}}
		}), files: map[string]map[string]kinds.ProjectedFile{
			"cfg": {"conf/hello.txt": {Data: []byte("hello"), Mode: 0o644}}, "sec": {"password": {Data: []byte("hunter2"), Mode: 0o400}},
			"opt": {}, "scratch": {}}},
		{name: "missing volume", spec: with(func(s *kinds.PodSpec) {
			s.Volumes = []kinds.Volume{{Name: "v", Secret: &kinds.SecretVolume{SecretName: "nope"}}}
		}), failure: `secret "nope" not found`},
		{name: "missing item", spec: with(func(s *kinds.PodSpec) {
			s.Volumes = []kinds.Volume{{Name: "v", ConfigMap: &kinds.ConfigMapVolume{Name: "app", Items: []kinds.KeyToPath{{Key: "x", Path: "x"}}}}}
		}), failure: `configmap "app" has no key "x" for a volume's item`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec
			p := &kinds.Pod{Object: &object.Object{Metadata: object.Meta{Name: "p", Namespace: "ns", UID: "u"}}, Spec: &spec}
			got, err := prepare(p, cfg, "10.0.0.1")
			if c.failure != "" {
				if !isConfigError(err) || err.Error() != c.failure {
					t.Fatalf("got %v, want the config error %q", err, c.failure)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.env != nil {
				if d := cmp.Diff(c.env, got.pod.Spec.Containers[0].Env); d != "" {
					t.Fatalf("env (-want +got):\n%s", d)
				}
			}
			if c.files != nil {
				files := map[string]map[string]kinds.ProjectedFile{}
				for _, v := range got.volumes {
					files[v.Name] = v.Files
				}
				if d := cmp.Diff(c.files, files); d != "" {
					t.Fatalf("files (-want +got):\n%s", d)
				}
			}
			if got.pod.Spec.Containers[0].EnvFrom != nil {
				t.Fatal("envFrom is left for the runtime")
			}
			if d := cmp.Diff(c.spec, *p.Spec); d != "" {
				t.Fatalf("the pod given was changed (-was +now):\n%s", d)
			}
		})
	}
}

// A pod waiting for its configuration shows each container waiting with
// the reason and the message, and is not ready.
func TestConfigErrorStatus(t *testing.T) {
	p := &kinds.Pod{Spec: &kinds.PodSpec{InitContainers: []kinds.Container{{Name: "i"}}, Containers: []kinds.Container{{Name: "a"}, {Name: "b"}}}}
	st := configErrorStatus(p, `configmap "x" not found`)
	if st.Phase != kinds.PodPending || len(st.ContainerStatuses) != 2 || len(st.InitContainerStatuses) != 1 {
		t.Fatalf("%+v", st)
	}
	for _, cs := range append(st.ContainerStatuses, st.InitContainerStatuses...) {
		if w := cs.State.Waiting; w == nil || w.Reason != ReasonConfigError || w.Message != `configmap "x" not found` {
			t.Fatalf("%s: %+v", cs.Name, cs.State)
		}
	}
	if c := object.FindCondition(st.Conditions, kinds.PodReady); c == nil || c.Status != object.ConditionFalse {
		t.Fatalf("conditions %+v", st.Conditions)
	}
}

// Pods decoded from equal specs share one; giving one pod the node's
// environment leaves the other's spec as it was.
func TestWithEnvLeavesSharedSpecs(t *testing.T) {
	decode := func(name string) *kinds.Pod {
		t.Helper()
		p, err := kinds.DecodePod(&object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: name},
			Spec: json.RawMessage(`{"initContainers":[{"name":"i"}],"containers":[{"name":"c","env":[{"name":"A","value":"1"}]}],"nodeName":"n-env"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := decode("a"), decode("b")
	if a.Spec != b.Spec {
		t.Fatal("equal specs decoded into copies of their own")
	}
	got := withEnv(a, []kinds.EnvVar{{Name: "SVC_HOST", Value: "10.0.0.1"}})
	if n := len(got.Spec.Containers[0].Env); n != 2 || len(got.Spec.InitContainers[0].Env) != 1 {
		t.Fatalf("the pod given the environment has %d and %d variables", n, len(got.Spec.InitContainers[0].Env))
	}
	if len(b.Spec.Containers[0].Env) != 1 || len(b.Spec.InitContainers[0].Env) != 0 || a.Spec != b.Spec {
		t.Fatalf("the shared spec was changed: %+v", b.Spec)
	}
}
