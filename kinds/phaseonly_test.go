package kinds_test

import (
	"encoding/json"
	"testing"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// PhaseOnly keeps a pod's status's phase alone where it can read and name
// it, and IsPhaseOnly tells its copies from stored pods.
func TestPhaseOnly(t *testing.T) {
	running := `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}],"podIP":"10.0.0.1"}`
	for _, tc := range []struct {
		name, status string
		want         string // the status kept; "" when o itself is
	}{
		{"a running pod", running, `{"phase":"Running"}`},
		{"a finished pod", `{"phase":"Succeeded","reason":"Completed"}`, `{"phase":"Succeeded"}`},
		{"no phase", `{"conditions":[{"type":"PodScheduled","status":"True"}]}`, `{}`},
		{"its phase twice, the last read", `{"phase":"Pending","phase":"Failed","reason":"x"}`, `{"phase":"Failed"}`},
		{"no status", ``, ""},
		{"its phase alone already", `{"phase":"Running"}`, ""},
		{"a phase of no name here", `{"phase":"Lost","podIP":"10.0.0.1"}`, ""},
		{"a phase that is not a string", `{"phase":1,"podIP":"10.0.0.1"}`, ""},
		{"a status that does not read", `{"phase":"Running",`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "p", Labels: map[string]string{"a": "b"}},
				Spec: json.RawMessage(`{"nodeName":"n"}`)}
			if tc.status != "" {
				o.Status = json.RawMessage(tc.status)
			}
			before := string(o.Status)
			kept := kinds.PhaseOnly(o)
			if string(o.Status) != before {
				t.Fatalf("the pod's own status became %s", o.Status)
			}
			// A cache that decoded the pod, as the scheduler's and the
			// controllers' decoders do, bound or not, keeps what one that
			// did not keeps.
			unbound := *o
			unbound.Spec = json.RawMessage(`{"containers":[{"name":"c"}]}`)
			for _, pod := range []*object.Object{o, &unbound} {
				keptOf := kinds.PhaseOnly(pod)
				for name, decode := range map[string]func(o, old *object.Object, oldValue any) any{
					"PodPhaseAfter": kinds.PodPhaseAfter, "PodAfter": kinds.PodAfter} {
					decoded, _ := decode(pod, nil, nil).(*kinds.Pod)
					if of := kinds.PhaseOnlyOf(pod, decoded); string(of.Status) != string(keptOf.Status) || (of == pod) != (keptOf == pod) {
						t.Fatalf("kept %s as %s decoded it (the pod itself: %v), %s from its JSON (%v)", of.Status, name, of == pod, keptOf.Status, keptOf == pod)
					}
				}
			}
			if tc.want == "" {
				if kept != o || kinds.IsPhaseOnly(kept) {
					t.Fatalf("kept %s (phase only: %v), want the pod itself", kept.Status, kinds.IsPhaseOnly(kept))
				}
				return
			}
			if kept == o || string(kept.Status) != tc.want || !kinds.IsPhaseOnly(kept) {
				t.Fatalf("kept %s (phase only: %v), want a copy with %s", kept.Status, kinds.IsPhaseOnly(kept), tc.want)
			}
			if string(kept.Spec) != string(o.Spec) || kept.Metadata.Name != "p" || kept.Metadata.Labels["a"] != "b" {
				t.Fatalf("the copy lost the rest of the pod: %+v", kept)
			}
			p, ok := kinds.PodPhaseAfter(kept, nil, nil).(*kinds.Pod)
			if want, _ := kinds.DecodePod(o); !ok || want == nil || p.Status.Phase != want.Status.Phase {
				t.Fatalf("the copy decodes to %+v, want the phase of the pod", p)
			}
			if grown := append(kept.Status, ' '); kinds.IsPhaseOnly(&object.Object{Status: grown}) {
				t.Fatal("an append to a kept status wrote into the shared one")
			}
		})
	}
	if kinds.IsPhaseOnly(nil) || kinds.IsPhaseOnly(&object.Object{Status: json.RawMessage(`{"phase":"Running"}`)}) {
		t.Fatal("a stored pod taken for a copy")
	}
}

// PhaseOnlyOf reads the phase of the pod as decoded, when it was decoded
// from the object, and the object's JSON otherwise.
func TestPhaseOnlyOfReadsTheDecodedPod(t *testing.T) {
	o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "p"},
		Spec: json.RawMessage(`{"nodeName":"n"}`), Status: json.RawMessage(`{"phase":"Running","podIP":"10.0.0.1"}`)}
	finished := &kinds.Pod{Object: o, Spec: &kinds.PodSpec{NodeName: "n"}, Status: kinds.PodStatus{Phase: kinds.PodSucceeded}}
	if kept := kinds.PhaseOnlyOf(o, finished); string(kept.Status) != `{"phase":"Succeeded"}` {
		t.Fatalf("kept %s of a pod decoded as Succeeded", kept.Status)
	}
	other := &kinds.Pod{Object: &object.Object{}, Spec: &kinds.PodSpec{}, Status: kinds.PodStatus{Phase: kinds.PodSucceeded}}
	if kept := kinds.PhaseOnlyOf(o, other); string(kept.Status) != `{"phase":"Running"}` {
		t.Fatalf("kept %s with a pod decoded from another object", kept.Status)
	}
}

// KeepPods keeps what its lean function keeps, and turns a *Pod decoded
// from the object whole to the copy kept, leaving any other form alone.
func TestKeepPods(t *testing.T) {
	running := func() *object.Object {
		return &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "p"},
			Spec: json.RawMessage(`{"nodeName":"n"}`), Status: json.RawMessage(`{"phase":"Running","podIP":"10.0.0.1"}`)}
	}
	other := running()
	for _, tc := range []struct {
		name       string
		lean       bool // the lean function keeps a copy
		value      func(o *object.Object) any
		toCopy     bool // the form is made to refer to the copy
		formOfPods bool
	}{
		{"a pod decoded from the object", true, func(o *object.Object) any { return kinds.PodAfter(o, nil, nil) }, true, true},
		{"the object kept whole", false, func(o *object.Object) any { return kinds.PodAfter(o, nil, nil) }, false, true},
		{"a pod decoded from another object", true, func(*object.Object) any { return kinds.PodAfter(other, nil, nil) }, false, true},
		{"no form (a delete, or a pod that does not decode)", true, func(*object.Object) any { return nil }, false, false},
		{"a form of another type", true, func(o *object.Object) any { return o }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := running()
			var given *kinds.Pod
			lean := func(o *object.Object, p *kinds.Pod) *object.Object {
				given = p
				if tc.lean {
					return kinds.PhaseOnlyOf(o, p)
				}
				return o
			}
			v := tc.value(o)
			var before *object.Object
			if p, ok := v.(*kinds.Pod); ok {
				before = p.Object
			}
			kept := kinds.KeepPods(lean)(o, v)
			if decodedFromO := before == o; (given != nil) != decodedFromO {
				t.Fatalf("the lean function was given %+v; want the decoded pod only when made from the object: %v", given, decodedFromO)
			}
			if tc.lean != (kept != o) || (tc.lean && (!kinds.IsPhaseOnly(kept) || string(kept.Status) != `{"phase":"Running"}`)) {
				t.Fatalf("kept %+v (the object itself: %v), want a lean copy: %v", kept, kept == o, tc.lean)
			}
			p, ok := v.(*kinds.Pod)
			if ok != tc.formOfPods {
				t.Fatalf("the form is %T", v)
			}
			switch {
			case tc.toCopy && p.Object != kept:
				t.Fatal("the decoded pod does not refer to the copy kept")
			case ok && !tc.toCopy && p.Object != before:
				t.Fatal("the decoded pod was changed")
			}
		})
	}
}
