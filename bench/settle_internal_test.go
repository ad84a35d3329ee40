package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

// The bench counts a node as settled once it is Ready and the controllers
// have announced it; events of other reasons do not count, and no node is
// counted taken on while any is not Ready.
func TestNodesSettled(t *testing.T) {
	ctx := context.Background()
	conn := bustest.Conn(t)
	nodes, err := conn.Store(ctx, bus.StoreSpec{Resource: "nodes", Kind: "Node"})
	if err != nil {
		t.Fatal(err)
	}
	events, err := conn.Store(ctx, reconcile.EventKind.StoreSpec())
	if err != nil {
		t.Fatal(err)
	}
	node := func(name, ready string) {
		t.Helper()
		o := &object.Object{APIVersion: "v1", Kind: "Node", Metadata: object.Meta{Name: name}}
		if err := o.SetStatus(kinds.NodeStatus{Conditions: []object.Condition{{Type: "Ready", Status: ready}}}); err != nil {
			t.Fatal(err)
		}
		if cur, err := nodes.Get(ctx, name); err == nil {
			o.Metadata.ResourceVersion = cur.Metadata.ResourceVersion
			_, err = nodes.Update(ctx, o, bus.UpdateOptions{Current: cur})
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := nodes.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	event := func(n int, reason, about string) {
		t.Helper()
		o := &object.Object{APIVersion: "v1", Kind: "Event", Metadata: object.Meta{Name: fmt.Sprintf("e%d", n), Namespace: "default"}}
		if err := kinds.SetEvent(o, kinds.Event{Reason: reason, InvolvedObject: kinds.ObjectReference{Kind: "Node", Name: about}}); err != nil {
			t.Fatal(err)
		}
		if _, err := events.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	check := func(wantReady, wantTaken int) {
		t.Helper()
		if ready, taken := nodesSettled(ctx, nodes, events); ready != wantReady || taken != wantTaken {
			t.Fatalf("settled: %d Ready and %d taken on, want %d and %d", ready, taken, wantReady, wantTaken)
		}
	}
	node("a", "True")
	node("b", "Unknown")
	event(1, "RegisteredNode", "a")
	event(2, "RegisteredNode", "b")
	check(1, 0)
	node("b", "True")
	check(2, 2)
	event(3, "NodeNotReady", "c")
	event(4, "RegisteredNode", "a")
	node("c", "True")
	check(3, 2)
}

// The bench's watch of every pod holds a large buffer; it must end with
// the run that started it, not live on into the next runs of the process.
func TestPodWatchEndsWithItsRun(t *testing.T) {
	conn := bustest.Conn(t)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchPods(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	poll.Receive(t, "the pod watch to end with its context", 10*time.Second, w.done)
}
