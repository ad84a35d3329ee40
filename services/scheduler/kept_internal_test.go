package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// keptPod keeps lean a pod bound to a node that derives its pods, and
// whole any other: an unbound one (binds write it back) and one bound to
// a node that reads the index (its entry is written from it). It reads
// the node of the pod as decoded when given it, else the pod's JSON.
func TestKeptPod(t *testing.T) {
	derived := func(node string) bool { return node == "drv" }
	for _, tc := range []struct {
		name, spec string
		decodedAt  string // the node of the pod as decoded; "-": not decoded
		lean       bool
	}{
		{"unbound", `{"containers":[{"name":"c"}]}`, "-", false},
		{"bound to a node that derives its pods", `{"nodeName":"drv"}`, "-", true},
		{"bound to a node that reads the index", `{"nodeName":"idx"}`, "-", false},
		{"bound to a node not known", `{"nodeName":"gone"}`, "-", false},
		{"decoded, bound to a node that derives its pods", `{"nodeName":"idx"}`, "drv", true},
		{"decoded, bound to a node that reads the index", `{"nodeName":"drv"}`, "idx", false},
		{"decoded, unbound", `{"nodeName":"drv"}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &object.Object{Kind: "Pod", Spec: json.RawMessage(tc.spec),
				Status: json.RawMessage(`{"phase":"Running","podIP":"10.0.0.1"}`)}
			var p *kinds.Pod
			if tc.decodedAt != "-" {
				p = &kinds.Pod{Object: o, Spec: &kinds.PodSpec{NodeName: tc.decodedAt}, Status: kinds.PodStatus{Phase: kinds.PodRunning}}
			}
			kept := keptPod(o, p, derived)
			if kinds.IsPhaseOnly(kept) != tc.lean || !tc.lean && kept != o {
				t.Fatalf("kept status %s (the pod itself: %v), want lean: %v", kept.Status, kept == o, tc.lean)
			}
		})
	}
}

// The router writes lean pods as stored, leaves out those gone, moved or
// unreadable, and fails the batch only when the bus does not answer.
func TestRouterWritesWholePods(t *testing.T) {
	pod := func(name, uid, node, status string) *object.Object {
		return &object.Object{Kind: "Pod", Metadata: object.Meta{Name: name, Namespace: "default", UID: uid},
			Spec: json.RawMessage(`{"nodeName":"` + node + `"}`), Status: json.RawMessage(status)}
	}
	stored := map[string]*object.Object{
		"default.lean":    pod("lean", "u1", "n", `{"phase":"Running","podIP":"10.0.0.1"}`),
		"default.moved":   pod("moved", "u2", "m", `{"phase":"Running","podIP":"10.0.0.2"}`),
		"default.renamed": pod("renamed", "other", "n", `{"phase":"Running","podIP":"10.0.0.3"}`),
	}
	errs := map[string]error{"default.corrupt": &bus.CorruptError{Key: "default.corrupt"}}
	read := func(_ context.Context, key string) (*object.Object, error) {
		if err := errs[key]; err != nil {
			return nil, err
		}
		if o := stored[key]; o != nil {
			return o, nil
		}
		return nil, bus.ErrNotFound
	}
	lean := func(name, uid string) bus.NodePodChange {
		return bus.NodePodChange{Node: "n", Key: "default." + name, Pod: kinds.PhaseOnly(pod(name, uid, "n", `{"phase":"Running","x":1}`))}
	}
	whole := bus.NodePodChange{Node: "n", Key: "default.whole", Pod: pod("whole", "u0", "n", `{"phase":"Pending"}`)}
	removal := bus.NodePodChange{Node: "n", Key: "default.removed"}
	r := newRouter(nil, nil, read, slog.New(slog.DiscardHandler))
	batch := []bus.NodePodChange{whole, lean("lean", "u1"), lean("gone", "u9"), lean("moved", "u2"),
		lean("renamed", "u3"), lean("corrupt", "u4"), removal}
	out, err := r.whole(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range out {
		got = append(got, ch.Key)
		if ch.Pod != nil && kinds.IsPhaseOnly(ch.Pod) {
			t.Fatalf("%s written lean", ch.Key)
		}
	}
	if want := "[default.whole default.lean default.removed]"; fmt.Sprint(got) != want {
		t.Fatalf("wrote %v, want %s", got, want)
	}
	if out[1].Pod != stored["default.lean"] || !kinds.IsPhaseOnly(batch[1].Pod) {
		t.Fatal("the lean pod was not replaced by the stored one in a batch of its own")
	}
	if same, err := r.whole(context.Background(), []bus.NodePodChange{whole, removal}); err != nil || len(same) != 2 ||
		same[0].Pod != whole.Pod || same[1].Pod != nil {
		t.Fatalf("a batch with no lean pod came back as %v, %v", same, err)
	}
	errs["default.lean"] = fmt.Errorf("reading: %w", bus.ErrUnavailable)
	if _, err := r.whole(context.Background(), batch); !errors.Is(err, bus.ErrUnavailable) {
		t.Fatalf("a bus that does not answer gave %v, want the batch failed", err)
	}
}
