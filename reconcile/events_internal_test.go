package reconcile

import (
	"fmt"
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
