package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

func TestLeaseLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := bustest.Conn(t).Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := l.Watch(ctx, "node.>")
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; !ev.Synced {
		t.Fatalf("first event %+v, want the sync marker", ev)
	}
	a, err := l.Acquire(ctx, "node.a", "agent-1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "node.a", "agent-2", time.Second); !errors.Is(err, bus.ErrAlreadyExists) {
		t.Fatalf("second acquire: %v, want ErrAlreadyExists", err)
	}
	a2, err := l.Renew(ctx, a, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Renew(ctx, a, time.Second); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("renew from a stale revision: %v, want ErrConflict", err)
	}
	// Not renewed, it expires, and the watch sees it go.
	deadline := time.After(10 * time.Second)
	for gone := false; !gone; {
		select {
		case ev := <-events:
			gone = ev.Key == "node.a" && ev.Lease == nil
		case <-deadline:
			t.Fatal("the lease did not expire")
		}
	}
	if _, err := l.Get(ctx, "node.a"); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("get after expiry: %v", err)
	}
	b, err := l.Acquire(ctx, "node.a", "agent-2", time.Second)
	if err != nil || b.Revision <= a2.Revision {
		t.Fatalf("acquire after expiry: %+v %v", b, err)
	}
	// Its holder, restarted with the same identity, takes it back at once.
	if c, err := l.Acquire(ctx, "node.a", "agent-2", 2*time.Second); err != nil || c.Revision <= b.Revision {
		t.Fatalf("the holder acquiring its own lease again: %+v %v", c, err)
	}
}

func TestNodePodsIndex(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	np, err := bustest.Conn(t).NodePods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *object.Object {
		return &object.Object{Kind: "Pod", Metadata: object.Meta{Name: name, Namespace: "default"}}
	}
	set := func(node, name string) bus.NodePodChange {
		return bus.NodePodChange{Node: node, Key: "default." + name, Pod: pod(name)}
	}
	remove := func(node, name string) bus.NodePodChange {
		return bus.NodePodChange{Node: node, Key: "default." + name}
	}
	// Node "n1.x" is another node, whose pods n1 must not take for its own.
	if err := np.Publish(ctx, []bus.NodePodChange{set("n1", "a"), set("n2", "b"), set("n1.x", "e"), set("n1", "c"), remove("n1", "c")}); err != nil {
		t.Fatal(err)
	}
	ch, err := np.Watch(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ch, bus.Added, "a")
	expect(t, ch, bus.Synced, "")
	if err := np.Publish(ctx, []bus.NodePodChange{set("n1", "d"), remove("n1", "a")}); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, bus.Modified, "d")
	if ev := <-ch; ev.Type != bus.Deleted || ev.Key != "default.a" {
		t.Fatalf("got %+v, want a removal of default.a", ev)
	}
}
