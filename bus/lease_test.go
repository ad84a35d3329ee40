package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
	events, err := l.Watch(ctx, "node.")
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
	if _, err := l.Put(ctx, "node.a", "agent-2", 2*time.Second); err != nil {
		t.Fatalf("put over a held lease: %v", err)
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
	f1, _ := np.Set(ctx, "n1", pod("a"))
	f2, _ := np.Set(ctx, "n2", pod("b"))
	f3, _ := np.Set(ctx, "n1", pod("c"))
	f4, _ := np.Remove(ctx, "n1", "default.c")
	if err := np.Wait(ctx, []jetstream.PubAckFuture{f1, f2, f3, f4}); err != nil {
		t.Fatal(err)
	}
	ch, err := np.Watch(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ch, bus.Added, "a")
	expect(t, ch, bus.Synced, "")
	f5, _ := np.Set(ctx, "n1", pod("d"))
	f6, _ := np.Remove(ctx, "n1", "default.a")
	_ = np.Wait(ctx, []jetstream.PubAckFuture{f5, f6})
	expect(t, ch, bus.Modified, "d")
	if ev := <-ch; ev.Type != bus.Deleted || ev.Key != "default.a" {
		t.Fatalf("got %+v, want a removal of default.a", ev)
	}
}
