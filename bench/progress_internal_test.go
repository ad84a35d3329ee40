package bench

import (
	"encoding/json"
	"testing"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// TestReadProgress: the bench's watch reads from a pod's stored JSON the
// same node and readiness as the full decoding does, by the value's
// layout and without it.
func TestReadProgress(t *testing.T) {
	spec := func(node string) string {
		s := `{"containers":[{"name":"web","image":"nginx","ports":[{"containerPort":80}],"env":[{"name":"nodeName","value":"decoy"}]}],"restartPolicy":"Always"`
		if node != "" {
			s += `,"nodeName":"` + node + `"`
		}
		return s + `,"schedulerName":"default"}`
	}
	for _, tc := range []struct {
		name, spec, status string
		bound              bool
		ready              bool
	}{
		{name: "new", spec: spec("")},
		{name: "bound", spec: spec("node-7"), status: `{"phase":"Pending"}`, bound: true},
		{name: "running, not yet ready", spec: spec("node-7"), bound: true,
			status: `{"phase":"Running","conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"False"}]}`},
		{name: "running and ready", spec: spec("node-7"), bound: true, ready: true,
			status: `{"phase":"Running","podIP":"10.0.0.1","conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"True","lastTransitionTime":"2026-11-27T00:00:00Z"}],"containerStatuses":[{"name":"web","ready":true,"state":{"running":{"startedAt":"2026-11-27T00:00:00Z"}}}]}`},
		{name: "running, no Ready condition", spec: spec("node-7"), bound: true,
			status: `{"phase":"Running","conditions":[{"type":"Initialized","status":"True"}]}`},
		{name: "ready but no longer running", spec: spec("node-7"), bound: true,
			status: `{"phase":"Failed","conditions":[{"type":"Ready","status":"True"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &object.Object{APIVersion: "v1", Kind: "Pod",
				Metadata: object.Meta{Name: "p", Namespace: "default", UID: "uid-1", Labels: map[string]string{"uid": "decoy"}},
				Spec:     json.RawMessage(tc.spec)}
			if tc.status != "" {
				o.Status = json.RawMessage(tc.status)
			}
			raw, l, err := object.EncodeLayout(o)
			if err != nil {
				t.Fatal(err)
			}
			if l == (object.Layout{}) {
				t.Fatal("no layout")
			}
			// Read by its layout, and whole (as a value written without
			// one); a pod known bound has its spec unread.
			for _, l := range []object.Layout{l, {}} {
				for _, known := range []bool{false, true} {
					p, err := readProgress(raw, l, known)
					if err != nil {
						t.Fatal(err)
					}
					want := kinds.BoundNode(o)
					if known {
						want = ""
					}
					if p.Spec.NodeName != want {
						t.Fatalf("layout %v, known bound %v: read node %q, want %q", l, known, p.Spec.NodeName, want)
					}
					if p.runningReady() != tc.ready {
						t.Fatalf("layout %v: running and ready: %v, want %v", l, p.runningReady(), tc.ready)
					}
				}
			}
		})
	}
	if _, err := readProgress([]byte(`{"metadata":`), object.Layout{}, false); err == nil {
		t.Fatal("a cut value was read")
	}
}
