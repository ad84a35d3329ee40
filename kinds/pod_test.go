package kinds_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func TestBoundNode(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
	}{
		{``, ""},
		{`{}`, ""},
		{`{"nodeName":"n1"}`, "n1"},
		{`{"containers":[{"name":"c","env":[{"name":"nodeName","value":"x"}]}],"nodeName":"n.2"}`, "n.2"},
		{`{"affinity":{"nodeName":"x"},"schedulerName":"s"}`, ""},
		{`{"nodeName":"\u00e9t\u00e9"}`, "été"},
		{`{"nodeName":7}`, ""},
		{`{"nodeName":`, ""},
		{`[]`, ""},
	} {
		o := &object.Object{Spec: json.RawMessage(tc.spec)}
		if got := kinds.BoundNode(o); got != tc.want {
			t.Errorf("BoundNode(%s) = %q, want %q", tc.spec, got, tc.want)
		}
		var spec kinds.PodSpec
		if tc.want != "" && (json.Unmarshal(o.Spec, &spec) != nil || spec.NodeName != tc.want) {
			t.Errorf("the spec %s decodes to node %q, BoundNode says %q", tc.spec, spec.NodeName, tc.want)
		}
		// The index files a bound pod under its node, an unbound one
		// nowhere: read from the spec, from the pod as decoded, and from
		// the spec again when the value decoded is another object's.
		stale := &kinds.Pod{Object: &object.Object{}, Spec: &kinds.PodSpec{NodeName: "stale"}}
		for what, v := range map[string]any{"none": nil, "decoded": kinds.PodAfter(o, nil, nil), "another's": stale} {
			if got := kinds.BoundNodeIndex(o, v); (tc.want == "") != (got == nil) || tc.want != "" && !slices.Equal(got, []string{tc.want}) {
				t.Errorf("BoundNodeIndex(%s) with %s value = %q, want it under %q", tc.spec, what, got, tc.want)
			}
		}
	}
	if kinds.BoundNode(nil) != "" || kinds.BoundNodeIndex(nil, nil) != nil {
		t.Error("a nil pod is bound")
	}
}

func TestSameToAgent(t *testing.T) {
	pod := func(uid, spec, status string, deleted *time.Time) *object.Object {
		return &object.Object{Metadata: object.Meta{UID: uid, DeletionTimestamp: deleted}, Spec: json.RawMessage(spec), Status: json.RawMessage(status)}
	}
	t1, t2 := time.Unix(1e9, 0), time.Unix(2e9, 0)
	base := pod("u", `{"nodeName":"a"}`, `{"phase":"Pending"}`, nil)
	for _, tc := range []struct {
		name string
		a, b *object.Object
		want bool
	}{
		{"both nil", nil, nil, true},
		{"one nil", base, nil, false},
		{"status only", base, pod("u", `{"nodeName":"a"}`, `{"phase":"Running"}`, nil), true},
		{"spec", base, pod("u", `{"nodeName":"b"}`, `{"phase":"Pending"}`, nil), false},
		{"uid", base, pod("v", `{"nodeName":"a"}`, `{"phase":"Pending"}`, nil), false},
		{"deletion starts", base, pod("u", `{"nodeName":"a"}`, `{"phase":"Pending"}`, &t1), false},
		{"same deletion", pod("u", `{}`, ``, &t1), pod("u", `{}`, `{"phase":"Running"}`, &t1), true},
		{"another deletion time", pod("u", `{}`, ``, &t1), pod("u", `{}`, ``, &t2), false},
	} {
		if got := kinds.SameToAgent(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameToAgent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A pod's decoding gives it the spec decoded before from the same bytes,
// its previous version's or another pod's, and never one decoded from
// other bytes; its status is always its own: whole, or for PodPhaseAfter
// and a bound pod, its phase alone.
func TestPodAfter(t *testing.T) {
	obj := func(spec, status string) *object.Object {
		return &object.Object{APIVersion: "v1", Kind: "Pod", Spec: json.RawMessage(spec), Status: json.RawMessage(status)}
	}
	const spec = `{"containers":[{"name":"web","image":"demo"}],"terminationGracePeriodSeconds":30}`
	const bound = `{"containers":[{"name":"web","image":"demo"}],"terminationGracePeriodSeconds":30,"nodeName":"n1"}`
	const running = `{"conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"web","ready":true,"restartCount":0,"state":{}}],"phase":"Running"}`
	old := obj(spec, `{"phase":"Pending"}`)
	prev := kinds.PodOrNil(old).(*kinds.Pod)
	other := kinds.PodOrNil(obj(spec, `{}`)).(*kinds.Pod)
	boundOld := obj(bound, `{"phase":"Pending"}`)
	boundPrev := kinds.PodOrNil(boundOld).(*kinds.Pod)
	for _, tc := range []struct {
		name     string
		o, old   *object.Object
		oldValue any
		phase    string
		node     string
		conds    int // the conditions PodAfter keeps (Ready alone)
		whole    int // the conditions PodPhaseAfter keeps of an unbound pod (all)
		isNil    bool
	}{
		{name: "a new pod", o: obj(spec, `{"phase":"Pending"}`), phase: "Pending"},
		{name: "a status write", o: obj(spec, `{"phase":"Running"}`), old: old, oldValue: prev, phase: "Running"},
		{name: "a bind", o: obj(bound, `{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"True"}]}`), old: old, oldValue: prev, phase: "Pending", node: "n1"},
		{name: "a bound pod's status write", o: obj(bound, running), old: boundOld, oldValue: boundPrev, phase: "Running", node: "n1", conds: 1},
		{name: "an unbound pod's conditions", o: obj(spec, `{"conditions":[{"type":"PodScheduled","status":"False"},{"type":"Ready","status":"False"}]}`), old: old, oldValue: prev, conds: 1, whole: 2},
		{name: "a running pod's four conditions", o: obj(bound, `{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True"},{"type":"Initialized","status":"True"},{"type":"Ready","status":"True","lastTransitionTime":"2026-03-14T09:26:56Z"},{"type":"ContainersReady","status":"True"}]}`), old: boundOld, oldValue: boundPrev, phase: "Running", node: "n1", conds: 1},
		{name: "a bound pod with a null status", o: obj(bound, `null`), node: "n1"},
		{name: "a bound pod with no status", o: obj(bound, ``), node: "n1"},
		// Read as a status decodes, whoever wrote it.
		{name: "a phase in another case", o: obj(bound, `{"Phase":"Succeeded"}`), phase: "Succeeded", node: "n1"},
		{name: "two phases", o: obj(bound, `{"phase":"Running","conditions":[],"phase":"Succeeded"}`), phase: "Succeeded", node: "n1"},
		{name: "a phase, then null", o: obj(bound, `{"phase":"Running","phase":null}`), phase: "Running", node: "n1"},
		{name: "a null phase", o: obj(bound, `{"phase":null}`), node: "n1"},
		{name: "the same spec written another way", o: obj(`{"containers": [{"name":"web","image":"demo"}],"terminationGracePeriodSeconds":30}`, `{}`), old: old, oldValue: prev},
		{name: "a form of another version", o: obj(spec, `{"phase":"Running"}`), old: old, oldValue: other, phase: "Running"},
		{name: "no form before", o: obj(spec, `{"phase":"Running"}`), old: old, phase: "Running"},
		{name: "a status that is not a pod's", o: obj(spec, `{"phase":7}`), old: old, oldValue: prev, isNil: true},
		{name: "a bound pod's status that is not a pod's", o: obj(bound, `{"phase":7}`), old: boundOld, oldValue: boundPrev, isNil: true},
		{name: "a spec that is not a pod's", o: obj(`{"nodeName":7}`, `{}`), isNil: true},
	} {
		for _, dec := range []struct {
			name      string
			fn        func(o, old *object.Object, oldValue any) any
			phaseOnly bool
		}{{"PodAfter", kinds.PodAfter, false}, {"PodPhaseAfter", kinds.PodPhaseAfter, true}} {
			t.Run(tc.name+"/"+dec.name, func(t *testing.T) {
				v := dec.fn(tc.o, tc.old, tc.oldValue)
				if tc.isNil {
					if v != nil {
						t.Fatalf("got %#v, want nil", v)
					}
					return
				}
				p, ok := v.(*kinds.Pod)
				if !ok || p.Object != tc.o {
					t.Fatalf("got %#v, want the pod of o", v)
				}
				for _, q := range []*kinds.Pod{prev, boundPrev} {
					want := string(tc.o.Spec) == string(q.Object.Spec)
					if shared := p.Spec == q.Spec; shared != want {
						t.Errorf("spec of %s shared: %v, want %v", q.Spec.NodeName, shared, want)
					}
				}
				conds := tc.conds
				switch {
				case dec.phaseOnly && tc.node != "":
					conds = 0
				case dec.phaseOnly:
					conds = tc.whole
				}
				if p.Spec.Containers[0].Image != "demo" || p.Spec.NodeName != tc.node || p.Status.Phase != tc.phase || len(p.Status.Conditions) != conds {
					t.Errorf("decoded %+v %+v, want node %q, phase %q and %d conditions", p.Spec, p.Status, tc.node, tc.phase, conds)
				}
				if !dec.phaseOnly && conds == 1 && (p.Status.Conditions[0].Type != kinds.PodReady || cap(p.Status.Conditions) != 1) {
					t.Errorf("kept conditions %+v (room for %d), want Ready alone", p.Status.Conditions, cap(p.Status.Conditions))
				}
			})
		}
	}
}

// Pods whose containers are the same bytes share one decoded copy of
// them, whatever else differs; an append to one pod's does not reach
// another's.
func TestContainersAreShared(t *testing.T) {
	decode := func(spec string) *kinds.Pod {
		t.Helper()
		p, err := kinds.DecodePod(&object.Object{APIVersion: "v1", Kind: "Pod", Spec: json.RawMessage(spec)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Three, which the decoder's growing slice holds with room for a fourth.
	const cs = `[{"name":"web","image":"demo","command":["serve"]},{"name":"a"},{"name":"b"}]`
	a := decode(`{"containers":` + cs + `,"nodeName":"n1"}`)
	b := decode(`{"containers":` + cs + `,"nodeName":"n2","initContainers":` + cs + `}`)
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] || &b.Spec.InitContainers[0] != &a.Spec.Containers[0] {
		t.Fatal("equal containers decoded into copies of their own")
	}
	if c := decode(`{"containers":[{"name":"web","image":"other"}]}`); c.Spec.Containers[0].Image != "other" || &c.Spec.Containers[0] == &a.Spec.Containers[0] {
		t.Fatalf("other containers decoded as %+v", c.Spec.Containers)
	}
	grown := append(a.Spec.Containers, kinds.Container{Name: "sidecar"})
	if &grown[0] == &a.Spec.Containers[0] || len(b.Spec.Containers) != 3 {
		t.Fatal("an append to one pod's containers wrote into the shared copy")
	}
	if n := decode(`{"containers":null}`); n.Spec.Containers != nil {
		t.Fatalf("null containers decoded as %+v", n.Spec.Containers)
	}
	if _, err := kinds.DecodePod(&object.Object{Spec: json.RawMessage(`{"containers":[{"name":7}]}`)}); err == nil {
		t.Fatal("containers of the wrong type decoded")
	}
}

// Pods whose specs are the same bytes share one decoded spec; other
// bytes, even meaning the same, decode apart; a spec too long to keep
// decodes each time; an absent or null spec is an empty one.
func TestSpecsAreShared(t *testing.T) {
	decode := func(spec string) *kinds.PodSpec {
		t.Helper()
		o := &object.Object{APIVersion: "v1", Kind: "Pod"}
		if spec != "" {
			o.Spec = json.RawMessage(spec)
		}
		s, err := kinds.DecodePodSpec(o)
		if err != nil || s == nil {
			t.Fatalf("%s: %v, %v", spec, s, err)
		}
		return s
	}
	const spec = `{"containers":[{"name":"web"}],"nodeName":"shared-1","tolerations":[{"key":"k","operator":"Exists"}]}`
	a, b := decode(spec), decode(spec)
	if a != b {
		t.Fatal("equal specs decoded into copies of their own")
	}
	if c := decode(`{"nodeName":"shared-1", "containers":[{"name":"web"}],"tolerations":[{"key":"k","operator":"Exists"}]}`); c == a || c.NodeName != "shared-1" {
		t.Fatalf("a spec of other bytes decoded as %+v (shared: %v)", c, c == a)
	}
	long := `{"containers":[{"name":"web","command":["` + strings.Repeat("x", 5000) + `"]}],"nodeName":"shared-2"}`
	if l, m := decode(long), decode(long); l == m || l.NodeName != "shared-2" || len(l.Containers[0].Command[0]) != 5000 {
		t.Fatalf("a long spec decoded as %q (shared: %v)", l.NodeName, l == m)
	}
	for _, empty := range []string{"", "null", "{}"} {
		if s := decode(empty); s.NodeName != "" || len(s.Containers) != 0 {
			t.Fatalf("%q decoded as %+v", empty, s)
		}
	}
	if _, err := kinds.DecodePodSpec(&object.Object{Spec: json.RawMessage(`{"nodeName":7}`)}); err == nil {
		t.Fatal("a spec of the wrong type decoded")
	}
}

// The controllers' decoder keeps of a pod's status what its owners read:
// the statuses of containers that restarted, were given ports or ended,
// whole and in order, and none of its host, start or init containers.
func TestPodAfterKeepsWhatOwnersRead(t *testing.T) {
	const running = `{"name":"%s","state":{"running":{"startedAt":"2026-11-29T09:00:00Z"}},"ready":true,"started":true,"restartCount":0,"image":"demo"}`
	c := func(name string) string { return fmt.Sprintf(running, name) }
	for _, tc := range []struct {
		name       string
		containers string
		want       []string // the names kept, nil for none
	}{
		{"running containers", `[` + c("a") + `,` + c("b") + `]`, nil},
		{"one restarted", `[` + c("a") + `,{"name":"b","state":{},"restartCount":2}]`, []string{"b"}},
		{"one given a port", `[{"name":"a","state":{},"ports":[{"name":"http","containerPort":20001}]},` + c("b") + `]`, []string{"a"}},
		{"one ended", `[` + c("a") + `,{"name":"b","state":{"terminated":{"exitCode":1}}}]`, []string{"b"}},
		{"one ended before", `[{"name":"a","state":{},"lastState":{"terminated":{"exitCode":137}}}]`, []string{"a"}},
		{"all read", `[{"name":"a","state":{},"restartCount":1},{"name":"b","state":{"terminated":{"exitCode":0}}}]`, []string{"a", "b"}},
		{"none", `[]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := `{"phase":"Running","hostIP":"10.1.0.1","podIP":"10.0.0.1","startTime":"2026-11-29T09:00:00Z",` +
				`"initContainerStatuses":[{"name":"init","state":{"terminated":{"exitCode":0}}}],"containerStatuses":` + tc.containers + `}`
			o := &object.Object{APIVersion: "v1", Kind: "Pod", Spec: json.RawMessage(`{"containers":[{"name":"a"},{"name":"b"}]}`), Status: json.RawMessage(status)}
			p, ok := kinds.PodAfter(o, nil, nil).(*kinds.Pod)
			if !ok {
				t.Fatal("the pod did not decode")
			}
			var names []string
			for _, cs := range p.Status.ContainerStatuses {
				names = append(names, cs.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Fatalf("kept the statuses of %v, want %v", names, tc.want)
			}
			st := p.Status
			if st.Phase != kinds.PodRunning || st.PodIP != "10.0.0.1" || st.HostIP != "" || st.StartTime != nil || st.InitContainerStatuses != nil {
				t.Fatalf("kept %+v", st)
			}
			if len(tc.want) > 0 {
				var whole kinds.PodStatus
				if err := o.DecodeStatus(&whole); err != nil {
					t.Fatal(err)
				}
				for _, cs := range p.Status.ContainerStatuses {
					i := slices.IndexFunc(whole.ContainerStatuses, func(w kinds.ContainerStatus) bool { return w.Name == cs.Name })
					if !reflect.DeepEqual(cs, whole.ContainerStatuses[i]) {
						t.Fatalf("kept %+v, want %+v whole", cs, whole.ContainerStatuses[i])
					}
				}
			}
		})
	}
}

// Pods whose Ready conditions are alike hold one list of them, and a
// phase this package names is its constant, in the controllers' cache
// (PodAfter) and the scheduler's (PodPhaseAfter) alike: neither is a
// copy a pod.
func TestPodAfterSharesReadyAndPhase(t *testing.T) {
	pod := func(ready string) *object.Object {
		return &object.Object{APIVersion: "v1", Kind: "Pod", Spec: json.RawMessage(`{"nodeName":"n","containers":[{"name":"a"}]}`),
			Status: json.RawMessage(`{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True"},` +
				`{"type":"Ready","status":"` + ready + `","lastTransitionTime":"2026-11-29T09:00:00Z"}]}`)}
	}
	decode := func(fn func(o, old *object.Object, oldValue any) any, o *object.Object) *kinds.Pod {
		t.Helper()
		p, ok := fn(o, nil, nil).(*kinds.Pod)
		if !ok {
			t.Fatal("the pod did not decode")
		}
		return p
	}
	a, b, other := decode(kinds.PodAfter, pod("True")), decode(kinds.PodAfter, pod("True")), decode(kinds.PodAfter, pod("False"))
	if len(a.Status.Conditions) != 1 || unsafe.SliceData(a.Status.Conditions) != unsafe.SliceData(b.Status.Conditions) {
		t.Fatalf("alike Ready conditions are two lists: %+v, %+v", a.Status.Conditions, b.Status.Conditions)
	}
	if other.Status.Conditions[0].Status != object.ConditionFalse {
		t.Fatalf("an unlike pod was given %+v", other.Status.Conditions)
	}
	for name, p := range map[string]*kinds.Pod{"PodAfter": a, "PodPhaseAfter": decode(kinds.PodPhaseAfter, pod("True"))} {
		if p.Status.Phase != kinds.PodRunning || unsafe.StringData(p.Status.Phase) != unsafe.StringData(kinds.PodRunning) {
			t.Fatalf("%s: phase %q is a copy", name, p.Status.Phase)
		}
	}
}
