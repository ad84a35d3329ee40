package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
)

// Two writes to different keys decided at the same guard revision: the
// first lands and moves the guard, the second is refused and stores
// nothing; read again, the guard lets it through.
func TestGuardSerialisesWritesToDifferentKeys(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	a, err := s.Create(ctx, widget("default", "a", `{"n":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(ctx, widget("default", "b", `{"n":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	const key = "default.ab_guard"
	g1, err := s.ReadGuard(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	g2 := *g1 // a second decision, from the same counts
	if g1.Revision != 0 {
		t.Fatalf("a guard never written reads at revision %d, want 0", g1.Revision)
	}

	a.Spec = []byte(`{"n":2}`)
	a2, err := s.Update(ctx, a, bus.UpdateOptions{Guard: g1})
	if err != nil {
		t.Fatalf("the first guarded write: %v", err)
	}
	if got := rv(t, a2); g1.Revision != got-1 {
		t.Fatalf("the guard moved to %d, want %d (just before the write at %d)", g1.Revision, got-1, got)
	}
	b.Spec = []byte(`{"n":2}`)
	if _, err := s.Update(ctx, b.Clone(), bus.UpdateOptions{Guard: &g2}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("a write decided before the guard moved: got %v, want ErrConflict", err)
	}
	if got, err := s.Get(ctx, "default.b"); err != nil || string(got.Spec) != `{"n":1}` {
		t.Fatalf("the refused write left b at %s (%v)", got.Spec, err)
	}
	// The same decision made again, from a fresh read of the guard.
	g3, err := s.ReadGuard(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if g3.Revision != g1.Revision {
		t.Fatalf("the guard reads at %d, the write left it at %d", g3.Revision, g1.Revision)
	}
	if _, err := s.Update(ctx, b, bus.UpdateOptions{Guard: g3}); err != nil {
		t.Fatalf("a write decided after the guard moved: %v", err)
	}
	// The writer's own next write goes on from where its guard moved to.
	a2.Spec = []byte(`{"n":3}`)
	if _, err := s.Update(ctx, a2, bus.UpdateOptions{Guard: g1}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("a write on a guard moved since by another: got %v, want ErrConflict", err)
	}
	// A stale object is refused even when the guard stands.
	stale := a2.Clone()
	stale.Metadata.ResourceVersion = a.Metadata.ResourceVersion
	if _, err := s.Update(ctx, stale, bus.UpdateOptions{Guard: g3}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("a stale object under a standing guard: got %v, want ErrConflict", err)
	}
}

// A guard is no object: lists, gets and watches pass over it, and a key
// holding an object is no guard.
func TestGuardIsNoObject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	ch, err := s.Watch(ctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Type != bus.Synced {
		t.Fatalf("first event %v, want Synced", ev.Type)
	}
	w, err := s.Create(ctx, widget("default", "w", `{"n":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.ReadGuard(ctx, "default.w_guard")
	if err != nil {
		t.Fatal(err)
	}
	w.Spec = []byte(`{"n":2}`)
	if _, err := s.Update(ctx, w, bus.UpdateOptions{Guard: g}); err != nil {
		t.Fatal(err)
	}
	l, err := s.List(ctx, bus.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Metadata.Name != "w" {
		t.Fatalf("list holds %d items, want only w", len(l.Items))
	}
	if _, err := s.Get(ctx, "default.w_guard"); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("get of the guard: %v, want ErrNotFound", err)
	}
	if _, err := s.ReadGuard(ctx, "default.w"); !errors.Is(err, bus.ErrInvalid) {
		t.Fatalf("a key holding an object read as a guard: %v, want ErrInvalid", err)
	}
	for ev := range ch {
		switch {
		case ev.Key == "default.w_guard" && (ev.Type != bus.Deleted || ev.Object != nil):
			t.Fatalf("the guard reached the watcher as %s with object %v", ev.Type, ev.Object)
		case ev.Key == "default.w" && ev.Type == bus.Modified:
			return
		}
	}
	t.Fatal("the watch ended early")
}
