package kinds_test

import (
	"testing"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// Objects stored by earlier releases keep being read: a ReplicaSet's
// revision and change cause under the old keys, an Event under spec.
func TestEarlierReleasesAreRead(t *testing.T) {
	cases := []struct {
		name     string
		ann      map[string]string
		revision int64
		cause    string
	}{
		{"Kubernetes' keys", map[string]string{"deployment.kubernetes.io/revision": "3", "kubernetes.io/change-cause": "v3"}, 3, "v3"},
		{"the earlier keys", map[string]string{"deployment.homeostat.io/revision": "2", "homeostat.io/change-cause": "v2"}, 2, "v2"},
		{"Kubernetes' keys win", map[string]string{"deployment.kubernetes.io/revision": "5", "deployment.homeostat.io/revision": "2"}, 5, ""},
		{"none", nil, 0, ""},
		{"not a number", map[string]string{"deployment.kubernetes.io/revision": "x"}, 0, ""},
	}
	for _, tc := range cases {
		m := object.Meta{Annotations: tc.ann}
		if got := kinds.Revision(&m); got != tc.revision {
			t.Errorf("%s: revision %d, want %d", tc.name, got, tc.revision)
		}
		if got := kinds.ChangeCause(&m); got != tc.cause {
			t.Errorf("%s: change cause %q, want %q", tc.name, got, tc.cause)
		}
	}

	legacy, err := object.Decode([]byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},
		"spec":{"involvedObject":{"kind":"Pod","name":"p"},"reason":"Started","count":2,"traceID":"abc"}}`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := kinds.EventOf(legacy)
	if err != nil || e.Reason != "Started" || e.Count != 2 || e.InvolvedObject.Name != "p" || e.TraceID != "abc" {
		t.Fatalf("an event stored under spec: %+v, %v", e, err)
	}
	// Written again, it moves to the top level, its trace to an annotation.
	if err := kinds.SetEvent(legacy, e); err != nil {
		t.Fatal(err)
	}
	b, _ := object.Encode(legacy)
	again, err := kinds.EventOf(legacy)
	if legacy.Spec != nil || err != nil || again != e || legacy.Metadata.Annotations[kinds.AnnotationTraceID] != "abc" {
		t.Fatalf("rewritten: %s (%+v, %v)", b, again, err)
	}
}
