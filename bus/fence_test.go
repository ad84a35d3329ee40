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

// owned is a widget controlled by owner.
func owned(name string, owner object.OwnerReference) *object.Object {
	w := widget("default", name, `{}`, nil)
	w.Metadata.OwnerReferences = []object.OwnerReference{owner}
	return w
}

func createAs(t *testing.T, s *bus.Store, o *object.Object, uid string, gen int64) error {
	t.Helper()
	_, errs := s.CreateMany(context.Background(), []*object.Object{o}, bus.CreateOptions{Authority: &bus.Authority{Owner: uid, Generation: gen}})
	return errs[0]
}

func ownerRef(uid string) object.OwnerReference {
	yes := true
	return object.OwnerReference{APIVersion: "test/v1", Kind: "Owner", Name: "o", UID: uid, Controller: &yes}
}

// A fenced key refuses creates on the authority of the owner's earlier
// generations, and only those.
func TestFenceRefusesEarlierGenerations(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	ref := ownerRef("owner-1")

	// A key that never held anything, fenced at generation 3.
	if _, err := s.Fence(ctx, "default.w-0", ref, 3); err != nil {
		t.Fatal(err)
	}
	if err := createAs(t, s, owned("w-0", ref), "owner-1", 2); !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("create at generation 2 over a fence at 3: got %v, want ErrFenced", err)
	}
	if _, err := s.Get(ctx, "default.w-0"); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("a refused create left something: %v", err)
	}
	// Another owner (a ReplicaSet made again under the same name) is not fenced.
	if err := createAs(t, s, owned("w-0", ownerRef("owner-2")), "owner-2", 1); err != nil {
		t.Fatalf("create by another owner: %v", err)
	}

	// A fence at the same generation is not against it.
	if _, err := s.Fence(ctx, "default.w-1", ref, 3); err != nil {
		t.Fatal(err)
	}
	if err := createAs(t, s, owned("w-1", ref), "owner-1", 3); err != nil {
		t.Fatalf("create at the fence's own generation: %v", err)
	}
	// Fencing a live key shows what is there and writes nothing.
	live, err := s.Fence(ctx, "default.w-1", ref, 4)
	if !errors.Is(err, bus.ErrAlreadyExists) || live == nil || live.Metadata.Name != "w-1" {
		t.Fatalf("fence over a live key: got %v, %v; want the object and ErrAlreadyExists", live, err)
	}
	// A plain create (no authority) is never fenced.
	if _, err := s.Fence(ctx, "default.w-2", ref, 9); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, owned("w-2", ref)); err != nil {
		t.Fatalf("a create without authority over a fence: %v", err)
	}
}

// A deletion that carries a fence leaves a tombstone that fences the key,
// whether the object goes at once or after its grace period.
func TestDeleteCarriesItsFence(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	ref := ownerRef("owner-1")
	for _, grace := range []int64{0, 30} {
		o, err := s.Create(ctx, owned("g", ref))
		if err != nil {
			t.Fatal(err)
		}
		g := grace
		marked, gone, err := s.Delete(ctx, o.Key(), bus.DeleteOptions{UID: o.Metadata.UID, Fence: 5, GracePeriodSeconds: &g})
		if err != nil {
			t.Fatal(err)
		}
		if !gone {
			if bus.FenceOf(marked) != 5 {
				t.Fatalf("the object being deleted does not carry its fence: %v", marked.Metadata.Annotations)
			}
			// The process owner removes it later, with no fence of its own.
			zero := int64(0)
			if _, _, err := s.Delete(ctx, o.Key(), bus.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				t.Fatal(err)
			}
		}
		if err := createAs(t, s, owned("g", ref), "owner-1", 4); !errors.Is(err, bus.ErrFenced) {
			t.Fatalf("grace %d: create at generation 4 after a deletion fenced at 5: got %v, want ErrFenced", grace, err)
		}
		if err := createAs(t, s, owned("g", ref), "owner-1", 5); err != nil {
			t.Fatalf("grace %d: create at generation 5: %v", grace, err)
		}
		cur, err := s.Get(ctx, o.Key())
		if err != nil {
			t.Fatal(err)
		}
		zero := int64(0)
		if _, _, err := s.Delete(ctx, cur.Key(), bus.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
}

// A create that lands before the fence wins: the fence fails, showing it.
// Either way the key never holds an object the fence refuses.
func TestFenceAndLateCreateRace(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	ref := ownerRef("owner-1")
	if err := createAs(t, s, owned("r", ref), "owner-1", 1); err != nil {
		t.Fatal(err)
	}
	live, err := s.Fence(ctx, "default.r", ref, 2)
	if !errors.Is(err, bus.ErrAlreadyExists) || live == nil {
		t.Fatalf("fence after a create landed: got %v, want ErrAlreadyExists", err)
	}
}

// Watchers pass over a bare fence: it deletes nothing they have seen, and
// carries no object.
func TestWatchPassesOverFences(t *testing.T) {
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
	if _, err := s.Fence(ctx, "default.f", ownerRef("owner-1"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, widget("default", "after", `{}`, nil)); err != nil {
		t.Fatal(err)
	}
	for ev := range ch {
		switch {
		case ev.Key == "default.f" && (ev.Type != bus.Deleted || ev.Object != nil):
			t.Fatalf("a fence reached the watcher as %s with object %v", ev.Type, ev.Object)
		case ev.Key == "default.after":
			return
		}
	}
	t.Fatal("the watch ended early")
}

// A fence written over an object's tombstone replaces it (a key keeps one
// entry), so it must carry the delete on: a watcher that held the object
// and reads only now (it lagged, or resumes) still sees it deleted, with
// the object's last state; and the fence still refuses earlier
// generations.
func TestFenceOverATombstoneCarriesTheDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	ref := ownerRef("owner-1")
	if err := createAs(t, s, owned("p", ref), "owner-1", 1); err != nil {
		t.Fatal(err)
	}
	o, err := s.Get(ctx, "default.p")
	if err != nil {
		t.Fatal(err)
	}
	held := rv(t, o)
	zero := int64(0)
	if _, _, err := s.Delete(ctx, o.Key(), bus.DeleteOptions{UID: o.Metadata.UID, Fence: 1, GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fence(ctx, o.Key(), ref, 2); err != nil {
		t.Fatal(err)
	}

	ch, err := s.Watch(ctx, bus.WatchOptions{AfterRevision: held})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-ch
	if ev.Type != bus.Deleted || ev.Key != "default.p" || ev.Object == nil || ev.Object.Metadata.UID != o.Metadata.UID {
		t.Fatalf("a watcher that held p got %s %s with object %v; want p deleted, with its last state", ev.Type, ev.Key, ev.Object)
	}
	if ev := <-ch; ev.Type != bus.Synced {
		t.Fatalf("then %s, want Synced", ev.Type)
	}

	if err := createAs(t, s, owned("p", ref), "owner-1", 1); !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("create at generation 1 after the fence at 2: got %v, want ErrFenced", err)
	}
	if _, err := s.Fence(ctx, o.Key(), ref, 2); err != nil {
		t.Fatalf("fencing again at the same generation: %v", err)
	}
	if err := createAs(t, s, owned("p", ref), "owner-1", 2); err != nil {
		t.Fatalf("create at the fence's generation: %v", err)
	}
}
