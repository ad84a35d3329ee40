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
