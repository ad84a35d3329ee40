package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
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
// client or another controller, brings the object back.
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
	write(bus.WithAuthor(ctx, "gadgets"), `{"by":"another controller"}`)
	passes(3)
}
