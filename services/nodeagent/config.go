package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// ConfigSource fetches the ConfigMaps and Secrets a pod refers to. A real
// node's agent asks the node relay (bus.NodeWriter); a host of simulated
// nodes reads the store (bus.ConfigReader).
type ConfigSource interface {
	PodConfig(ctx context.Context, pod *object.Object) (*bus.PodConfig, error)
}

// ReasonConfigError is a waiting container's reason when what its pod
// refers to is missing, as Kubernetes names it.
const ReasonConfigError = "CreateContainerConfigError"

// configError says what a pod refers to and cannot have; the pod waits,
// and is tried again each sync period. Its message names objects and
// keys, never values.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// needsConfig reports whether a pod must fetch anything before it starts.
func needsConfig(spec *kinds.PodSpec) bool {
	cms, secs := spec.ConfigRefs()
	return len(cms)+len(secs) > 0
}

// prepared is a pod ready to start: its containers' variables all have
// values, and its volumes their files.
type prepared struct {
	pod     *kinds.Pod
	volumes []kinds.ProjectedVolume
}

// envName is what envFrom takes as a variable: keys that are not variable
// names are skipped, as Kubernetes does.
var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// prepare resolves a pod against its configuration: valueFrom and envFrom
// become plain values (envFrom's first, so that env wins), and volumes
// become files. A *configError names the first thing missing.
func prepare(p *kinds.Pod, cfg *bus.PodConfig, address string) (*prepared, error) {
	if cfg == nil {
		cfg = &bus.PodConfig{}
	}
	src := configLookup{cfg: cfg, ns: p.Metadata.Namespace}
	out, err := withContainers(p, func(c *kinds.Container) error {
		env, err := resolveEnv(c, p, src, address)
		c.Env, c.EnvFrom = env, nil
		return err
	})
	if err != nil {
		return nil, err
	}
	vols, err := projectVolumes(p.Spec.Volumes, src)
	if err != nil {
		return nil, err
	}
	return &prepared{pod: out, volumes: vols}, nil
}

func resolveEnv(c *kinds.Container, p *kinds.Pod, src configLookup, address string) ([]kinds.EnvVar, error) {
	var env []kinds.EnvVar
	for _, f := range c.EnvFrom {
		kind, ref := "configmap", f.ConfigMapRef
		if f.SecretRef != nil {
			kind, ref = "secret", f.SecretRef
		}
		data, ok := src.data(kind, ref.Name)
		if !ok {
			if optional(ref.Optional) {
				continue
			}
			return nil, &configError{fmt.Sprintf("%s %q not found", kind, ref.Name)}
		}
		for _, k := range sortedKeys(data) {
			if envName.MatchString(f.Prefix + k) {
				env = append(env, kinds.EnvVar{Name: f.Prefix + k, Value: string(data[k])})
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env = append(env, kinds.EnvVar{Name: e.Name, Value: e.Value})
			continue
		}
		v, ok, err := src.value(e.ValueFrom, p, address)
		if err != nil {
			return nil, err
		}
		if ok {
			env = append(env, kinds.EnvVar{Name: e.Name, Value: v})
		}
	}
	return env, nil
}

func optional(b *bool) bool { return b != nil && *b }

// configLookup finds values in a pod's fetched configuration.
type configLookup struct {
	cfg *bus.PodConfig
	ns  string
}

func (l configLookup) data(kind, name string) (map[string][]byte, bool) {
	objs := l.cfg.ConfigMaps
	if kind == "secret" {
		objs = l.cfg.Secrets
	}
	o, ok := objs[name]
	if !ok {
		return nil, false
	}
	return kinds.ConfigData(o), true
}

// value is one variable's value from its source; false when an optional
// source lacks it.
func (l configLookup) value(s *kinds.EnvVarSource, p *kinds.Pod, address string) (string, bool, error) {
	if f := s.FieldRef; f != nil {
		return fieldValue(f.FieldPath, p, address), true, nil
	}
	kind, name, ref := "configmap", "ConfigMap", s.ConfigMapKeyRef
	if s.SecretKeyRef != nil {
		kind, name, ref = "secret", "Secret", s.SecretKeyRef
	}
	data, ok := l.data(kind, ref.Name)
	if !ok {
		if optional(ref.Optional) {
			return "", false, nil
		}
		return "", false, &configError{fmt.Sprintf("%s %q not found", kind, ref.Name)}
	}
	v, ok := data[ref.Key]
	if !ok {
		if optional(ref.Optional) {
			return "", false, nil
		}
		return "", false, &configError{fmt.Sprintf("couldn't find key %s in %s %s/%s", ref.Key, name, l.ns, ref.Name)}
	}
	return string(v), true, nil
}

func fieldValue(path string, p *kinds.Pod, address string) string {
	switch path {
	case "metadata.name":
		return p.Metadata.Name
	case "metadata.namespace":
		return p.Metadata.Namespace
	case "metadata.uid":
		return p.Metadata.UID
	case "spec.nodeName":
		return p.Spec.NodeName
	}
	return address // status.hostIP and status.podIP: processes share the node's address
}

// projectVolumes turns the pod's volumes into files: every key, or only
// the items listed (each key of them must exist unless optional).
func projectVolumes(vols []kinds.Volume, src configLookup) ([]kinds.ProjectedVolume, error) {
	var out []kinds.ProjectedVolume
	for _, v := range vols {
		pv := kinds.ProjectedVolume{Name: v.Name, Files: map[string]kinds.ProjectedFile{}}
		var (
			kind, name string
			items      []kinds.KeyToPath
			mode       *int32
			opt        *bool
		)
		switch {
		case v.ConfigMap != nil:
			kind, name, items, mode, opt = "configmap", v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.DefaultMode, v.ConfigMap.Optional
		case v.Secret != nil:
			kind, name, items, mode, opt = "secret", v.Secret.SecretName, v.Secret.Items, v.Secret.DefaultMode, v.Secret.Optional
		default:
			pv.EmptyDir = true
			out = append(out, pv)
			continue
		}
		data, ok := src.data(kind, name)
		if !ok && !optional(opt) {
			return nil, &configError{fmt.Sprintf("%s %q not found", kind, name)}
		}
		if err := fillFiles(pv.Files, data, items, fileMode(mode, 0o644), kind, name, optional(opt)); err != nil {
			return nil, err
		}
		out = append(out, pv)
	}
	return out, nil
}

func fillFiles(files map[string]kinds.ProjectedFile, data map[string][]byte, items []kinds.KeyToPath, mode uint32, kind, name string, opt bool) error {
	if len(items) == 0 {
		for k, b := range data {
			files[k] = kinds.ProjectedFile{Data: b, Mode: mode}
		}
		return nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if opt {
				continue
			}
			return &configError{fmt.Sprintf("%s %q has no key %q for a volume's item", kind, name, it.Key)}
		}
		files[it.Path] = kinds.ProjectedFile{Data: b, Mode: fileMode(it.Mode, mode)}
	}
	return nil
}

func fileMode(m *int32, def uint32) uint32 {
	if m == nil {
		return def
	}
	return uint32(*m) & 0o777
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isConfigError reports whether err is the pod's to wait out, not the bus's.
func isConfigError(err error) bool {
	var ce *configError
	return errors.As(err, &ce)
}

// configErrorStatus is the status of a pod waiting for its configuration.
func configErrorStatus(p *kinds.Pod, msg string) kinds.PodStatus {
	st := kinds.PodStatus{Phase: kinds.PodPending}
	wait := func(cs []kinds.Container) []kinds.ContainerStatus {
		var out []kinds.ContainerStatus
		for _, c := range cs {
			out = append(out, kinds.ContainerStatus{Name: c.Name, Image: c.Image,
				State: kinds.ContainerState{Waiting: &kinds.StateWaiting{Reason: ReasonConfigError, Message: msg}}})
		}
		return out
	}
	st.InitContainerStatuses = wait(p.Spec.InitContainers)
	st.ContainerStatuses = wait(p.Spec.Containers)
	names := make([]string, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, t := range []string{kinds.ContainersReady, kinds.PodReady} {
		st.Conditions = append(st.Conditions, object.Condition{Type: t, Status: object.ConditionFalse,
			Reason: "ContainersNotReady", Message: fmt.Sprintf("containers with unready status: %v", names)})
	}
	return st
}

// lazyConfigReader opens the store's configuration buckets on first use,
// so that a host of many simulated nodes whose pods refer to nothing
// opens none.
type lazyConfigReader struct {
	bus    *bus.Conn
	mu     sync.Mutex
	reader *bus.ConfigReader
}

func (l *lazyConfigReader) PodConfig(ctx context.Context, pod *object.Object) (*bus.PodConfig, error) {
	l.mu.Lock()
	if l.reader == nil {
		r, err := l.bus.ConfigReader(ctx)
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		l.reader = r
	}
	r := l.reader
	l.mu.Unlock()
	return r.PodConfig(ctx, pod)
}
