package reconcile

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/kinds"
)

// TestAggregate: more than aggregateAbove like events about the objects of
// one owner become one event about the owner, counting them all; fewer,
// other reasons and objects without an owner stay as they are.
func TestAggregate(t *testing.T) {
	rs := &kinds.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", Namespace: "default", UID: "rs1"}
	other := &kinds.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "db-1", Namespace: "default", UID: "rs2"}
	batch := map[string]*pendingEvent{}
	add := func(pod string, owner *kinds.ObjectReference, reason string, n int32) {
		ref := kinds.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod, Namespace: "default", UID: "u-" + pod}
		ns, name := eventName(ref, kinds.EventNormal, reason)
		batch[ns+"."+name] = &pendingEvent{ns: ns, name: name, n: n, owner: owner, spec: kinds.Event{InvolvedObject: ref,
			Reason: reason, Type: kinds.EventNormal, Message: "Successfully assigned default/" + pod + " to n1",
			FirstTimestamp: "2026-11-25T12:00:0" + pod[len(pod)-1:] + "Z", LastTimestamp: "2026-11-25T12:00:0" + pod[len(pod)-1:] + "Z"}}
	}
	for i := range 8 {
		add(fmt.Sprintf("web-7d9f-%d", i), rs, "Scheduled", 1)
	}
	add("web-7d9f-0", rs, "Pulled", 2)
	for i := range 3 {
		add(fmt.Sprintf("db-1-%d", i), other, "Scheduled", 1)
	}
	add("bare", nil, "Scheduled", 1)
	got := aggregate(batch)
	var about []string
	for _, p := range got {
		about = append(about, fmt.Sprintf("%s/%s %s %d", p.spec.InvolvedObject.Kind, p.spec.InvolvedObject.Name, p.spec.Reason, p.n))
	}
	if len(got) != 6 {
		t.Fatalf("%d events after aggregation, want 6: %v", len(got), about)
	}
	rsNS, rsName := eventName(*rs, kinds.EventNormal, "Scheduled")
	agg := got[rsNS+"."+rsName]
	if agg == nil || agg.n != 8 || agg.spec.InvolvedObject.UID != "rs1" || agg.spec.FirstTimestamp != "2026-11-25T12:00:00Z" ||
		agg.spec.LastTimestamp != "2026-11-25T12:00:07Z" ||
		!strings.HasPrefix(agg.spec.Message, "8 pods (web-7d9f-0, web-7d9f-1, web-7d9f-2, …), the latest: Successfully assigned default/web-7d9f-7") {
		t.Fatalf("the ReplicaSet's event: %+v (all: %v)", agg, about)
	}
}

// TestEventNames: an event's name is its object's name and a hash of what
// it is about, the same from one release to the next, so that a restarted
// recorder folds into the events it wrote before.
func TestEventNames(t *testing.T) {
	for _, tc := range []struct {
		ref      kinds.ObjectReference
		ns, name string
	}{
		{kinds.ObjectReference{Kind: "Pod", Name: "web-7d9f-0", Namespace: "default", UID: "u1"}, "default", "web-7d9f-0.c109a848fe599650"},
		{kinds.ObjectReference{Kind: "Node", Name: "n1"}, "default", "n1.a32ef3d100628aca"},
		{kinds.ObjectReference{Kind: "ReplicaSet", Name: strings.Repeat("a", 250) + "-.x", Namespace: "ns", UID: "é"}, "ns", strings.Repeat("a", 236) + ".dc347cf39ba50ef6"},
	} {
		if ns, name := eventName(tc.ref, kinds.EventWarning, "BackOff"); ns != tc.ns || name != tc.name {
			t.Errorf("%s %s: named %s/%s, want %s/%s", tc.ref.Kind, tc.ref.Name, ns, name, tc.ns, tc.name)
		}
	}
	// The hash is hash/fnv's, written as sixteen hex digits (some of
	// them leading zeros).
	for i := range 2000 {
		ref := kinds.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("p-%d", i), Namespace: "default", UID: fmt.Sprintf("u%d", i)}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%s/%s/%s/%s", ref.UID, ref.Kind, ref.Name, kinds.EventNormal, "Scheduled")
		want := fmt.Sprintf("%s.%016x", ref.Name, h.Sum64())
		if _, name := eventName(ref, kinds.EventNormal, "Scheduled"); name != want {
			t.Fatalf("named %s, want %s", name, want)
		}
	}
}
