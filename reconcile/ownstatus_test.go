package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

// TestOwnStatusWriteDoesNotComeBack: a pass that writes its object's
// status is not followed by another for that write, though each pass
// writes a status the last did not; a status written by anyone else, a
// client, another controller or the same controller in another process,
// brings the object back.
func TestOwnStatusWriteDoesNotComeBack(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	rec := &recorder{}
	rec.fn = func(ctx context.Context, req reconcile.Request, n int) (reconcile.Result, error) {
		if req.Key != "default.w" {
			return reconcile.Result{}, nil
		}
		o, err := s.Get(ctx, req.Key)
		if err != nil {
			return reconcile.Result{}, err
		}
		next := o.Clone()
		next.Status = json.RawMessage(fmt.Sprintf(`{"passes":%d}`, n))
		_, err = s.Update(ctx, next, bus.UpdateOptions{Current: o})
		return reconcile.Result{}, err
	}
	start(t, conn, reconcile.Options{Reconciler: rec, Resync: -1, Workers: 1})
	ctx := context.Background()
	if _, err := s.Create(ctx, widget("w")); err != nil {
		t.Fatal(err)
	}
	passes := func(want int) {
		t.Helper()
		poll.Until(t, fmt.Sprintf("status written by pass %d", want), 10*time.Second, func() bool {
			o, err := s.Get(ctx, "default.w")
			return err == nil && string(o.Status) == fmt.Sprintf(`{"passes":%d}`, want)
		})
		// Were the pass's own write to come back, another pass would
		// follow within a fold; three other keys reconciled one after
		// another take longer than that.
		for i := range 3 {
			k := fmt.Sprintf("other-%d-%d", want, i)
			if _, err := s.Create(ctx, widget(k)); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, k+" reconciled", 10*time.Second, func() bool { return rec.count("default."+k) == 1 })
		}
		if got := rec.count("default.w"); got != want {
			t.Fatalf("w was reconciled %d times, want %d", got, want)
		}
	}
	passes(1)
	write := func(ctx context.Context, status string) {
		t.Helper()
		o, err := s.Get(ctx, "default.w")
		if err != nil {
			t.Fatal(err)
		}
		n := o.Clone()
		n.Status = json.RawMessage(status)
		if _, err := s.Update(ctx, n, bus.UpdateOptions{Current: o}); err != nil {
			t.Fatal(err)
		}
	}
	write(ctx, `{"by":"a client"}`)
	passes(2)
	write(bus.WithAuthor(ctx, bus.NewAuthor("gadgets", widgets.Resource, "default.w")), `{"by":"another controller"}`)
	passes(3)
	// The same controller in another process may have read w before
	// this process's last write: its status write brings w back.
	write(bus.WithAuthor(ctx, bus.NewAuthor("widgets/elsewhere", widgets.Resource, "default.w")), `{"by":"another process"}`)
	passes(4)
}

// TestPassReadsItsOwnStatusWrite: the key's next pass in the process
// reads the status the last one wrote, though that write's return
// enqueued nothing: here the next pass is queued before the write, and
// starts the moment the key is free, while the informer is slow.
func TestPassReadsItsOwnStatusWrite(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	var inf *reconcile.Informer
	var ctrl *reconcile.Controller
	ready := make(chan struct{})
	var mu sync.Mutex
	var wrote uint64
	var stale []string
	rec := &recorder{}
	rec.fn = func(ctx context.Context, req reconcile.Request, n int) (reconcile.Result, error) {
		<-ready
		cached, ok := inf.Get(req.Key)
		mu.Lock()
		if ok && rev(cached) < wrote {
			stale = append(stale, fmt.Sprintf("pass %d read revision %d, after a write at %d", n, rev(cached), wrote))
		}
		mu.Unlock()
		if n >= 20 {
			return reconcile.Result{}, nil
		}
		ctrl.EnqueueKey(req.Key)
		next := cached.Clone()
		next.Status = json.RawMessage(fmt.Sprintf(`{"passes":%d}`, n))
		o, err := s.Update(ctx, next, bus.UpdateOptions{Current: cached})
		if err == nil {
			mu.Lock()
			wrote = rev(o)
			mu.Unlock()
		}
		return reconcile.Result{}, err
	}
	r := start(t, conn, reconcile.Options{Reconciler: rec, Resync: -1, Workers: 4, CoalesceEvery: time.Millisecond})
	inf, ctrl = r.mgr.Informer(widgets), r.ctrl
	// A slow handler holds the informer back after each change, as a
	// busy process would: each status write comes back late.
	inf.OnChange(func(reconcile.Change) { time.Sleep(10 * time.Millisecond) })
	close(ready)
	if _, err := s.Create(context.Background(), widget("w")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "twenty passes", 20*time.Second, func() bool { return rec.count("default.w") >= 20 })
	mu.Lock()
	defer mu.Unlock()
	if len(stale) > 0 {
		t.Fatalf("passes read a copy older than the last one's own write:\n%s", strings.Join(stale, "\n"))
	}
}
