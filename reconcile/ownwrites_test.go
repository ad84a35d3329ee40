package reconcile_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

var gadgets = reconcile.Kind{Kind: "Gadget", APIVersion: "test/v1", Resource: "gadgets.test", Namespaced: true}

// TestPassReadsItsLastPassWrites: a key's next pass waits for the
// caches to show what its last pass wrote to another kind, however far
// behind the cache of that kind is, rather than deciding again from a
// cache without it (a ReplicaSet creating its pods a second time).
func TestPassReadsItsLastPassWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := bustest.Conn(t)
	mgr, err := reconcile.NewManager(ctx, reconcile.ManagerOptions{Bus: conn, DrainTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The gadgets' cache stalls on the first gadget the first pass makes
	// (its handlers run on the cache's watch, after the cache has it), so
	// that the second stays out of it until the test lets it go: a cache
	// behind the store, for as long as the test needs.
	gadgetInf := mgr.Informer(gadgets)
	stalled, release := make(chan struct{}), make(chan struct{})
	gadgetInf.OnChange(func(ch reconcile.Change) {
		if ch.New != nil && ch.New.Metadata.Name == "first" {
			close(stalled)
			<-release
		}
	})
	var released atomic.Bool
	letGo := func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	}
	defer letGo()
	var sawMade atomic.Int32 // 1: the second pass saw it; 2: it did not
	rec := &recorder{fn: func(ctx context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
		if n == 1 {
			for _, name := range []string{"first", "made"} {
				if _, err := gadgetInf.Store().Create(ctx, &object.Object{APIVersion: "test/v1", Kind: "Gadget",
					Metadata: object.Meta{Name: name, Namespace: "default"}, Spec: json.RawMessage(`{}`)}); err != nil {
					return reconcile.Result{}, err
				}
			}
			return reconcile.Result{RequeueAfter: time.Millisecond}, nil
		}
		if n == 2 {
			if _, ok := gadgetInf.Get("default.made"); ok {
				sawMade.Store(1)
			} else {
				sawMade.Store(2)
			}
		}
		return reconcile.Result{}, nil
	}}
	const name = "ownwrites"
	if _, err := mgr.Add(ctx, reconcile.Options{Name: name, For: widgets, Reconciler: rec, Resync: -1, CacheWait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	defer func() { letGo(); cancel(); <-done }()
	if _, err := store(t, conn).Create(ctx, widget("w")); err != nil {
		t.Fatal(err)
	}
	poll.Receive(t, "stall of the gadgets' cache on the first pass's gadget", 15*time.Second, stalled)
	// The stall lasts a second, long after the second pass's delivery
	// (a millisecond after the first): a pass that did not wait would
	// reconcile within it, from the stalled cache. How long it lasts
	// changes nothing for a pass that waits.
	time.AfterFunc(time.Second, letGo)
	poll.Until(t, "the second pass", 15*time.Second, func() bool { return sawMade.Load() != 0 })
	if sawMade.Load() != 1 {
		t.Fatal("the second pass read a cache without the gadget its first pass made")
	}
}
