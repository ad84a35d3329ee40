package reconcile_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

// metric reads a counter or gauge series from the default gatherer; ok is
// false when the series does not exist.
func metric(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// A key whose cache has not reached the revision that triggered it within
// CacheWait is handed back, not reconciled from the old state and acked:
// the change's own enqueue, once the cache has it, carries the same
// message id and folds into the one already taken, so an ack there would
// have lost the change until the resync.
func TestKeyWaitsForItsCache(t *testing.T) {
	ctx := context.Background()
	conn := bustest.Conn(t)
	s := store(t, conn)
	created, err := s.Create(ctx, widget("late"))
	if err != nil {
		t.Fatal(err)
	}
	var inf atomic.Pointer[reconcile.Informer]
	var mu sync.Mutex
	var specs []string
	rec := &recorder{fn: func(_ context.Context, req reconcile.Request, _ int) (reconcile.Result, error) {
		if o, ok := inf.Load().Get(req.Key); ok {
			mu.Lock()
			specs = append(specs, string(o.Spec))
			mu.Unlock()
		}
		return reconcile.Result{}, nil
	}}
	const name = "cachewait"
	r := start(t, conn, reconcile.Options{Name: name, Reconciler: rec, Resync: -1, CacheWait: 200 * time.Millisecond})
	inf.Store(r.mgr.Informer(widgets))
	poll.Until(t, "the initial reconcile", 10*time.Second, func() bool { return rec.count("default.late") >= 1 })

	// Work for the next revision, before it exists: as a process whose
	// informer saw the change would enqueue it, while this one's lags.
	q, err := conn.Queue(ctx, bus.QueueSpec{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.LastRevision(ctx) // a confirmation, which takes a revision too
	if err != nil {
		t.Fatal(err)
	}
	next := last + 1
	if err := q.Add(ctx, bus.Work{Key: "default.late", MinRevisions: map[string]uint64{widgets.Resource: next}}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the delivery to find its cache behind", 10*time.Second, func() bool {
		n, _ := metric(t, "homeostat_reconcile_cache_behind_total", map[string]string{"controller": name})
		return n >= 1
	})
	upd := created.Clone()
	upd.Spec = json.RawMessage(`{"size":2}`)
	updated, err := s.Update(ctx, upd, bus.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev(updated) != next {
		t.Fatalf("the update is revision %d, want %d (something else wrote the stream)", rev(updated), next)
	}
	poll.Until(t, "a reconcile that sees the update", 15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(specs) > 0 && specs[len(specs)-1] == `{"size":2}`
	})
}
