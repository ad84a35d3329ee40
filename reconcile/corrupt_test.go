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
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

// corruptGauge reads homeostat_corrupt_objects{resource, key}; ok is
// false when the series does not exist.
func corruptGauge(t *testing.T, resource, key string) (float64, bool) {
	t.Helper()
	return metric(t, "homeostat_corrupt_objects", map[string]string{"resource": resource, "key": key})
}

// One corrupt stored value stops nothing: every good object, before and
// after it, is reconciled; the corrupt key is reported (a Warning event and
// the metric) and never reaches the reconciler as an object; a good object
// overwritten by a corrupt value leaves the cache; deleting or replacing a
// corrupt value clears the metric.
func TestCorruptValueStopsNothing(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	ctx := context.Background()
	// Two fresh keys made corrupt, and a good object overwritten by one.
	const bad, null, victim = "default.corrupt", "default.nothing", "default.victim"
	corrupt := []string{bad, null, victim}
	sightings := &cacheSightings{ready: make(chan struct{}), asObject: map[string]int{}}
	rec := &recorder{fn: sightings.reconcile}
	r := start(t, conn, reconcile.Options{Reconciler: rec, Resync: -1})
	inf := r.mgr.Informer(widgets)
	sightings.setInformer(inf)

	if _, err := s.Create(ctx, widget("victim")); err != nil {
		t.Fatal(err)
	}
	good := createGoodWidgets(ctx, t, s, 0, 5)
	poll.Until(t, "the victim reconciled while good", 10*time.Second, func() bool { return sightings.handed(victim) >= 1 })
	for key, value := range map[string]string{bad: `{bad`, null: `null`, victim: `null`} {
		if _, err := s.PutRaw(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	good = append(good, createGoodWidgets(ctx, t, s, 5, 10)...)
	waitGoodOnlyReconciledAndCached(t, rec, inf, good)
	for _, k := range corrupt {
		if _, ok := inf.Get(k); ok {
			t.Errorf("the informer holds the corrupt key %s as an object", k)
		}
	}
	if n := sightings.handed(bad) + sightings.handed(null); n > 0 {
		t.Errorf("the reconciler was handed a corrupt key as an object %d times", n)
	}
	checkCorruptReported(ctx, t, conn, corrupt)

	// Deleting a corrupt value, or writing a good object over it, clears it.
	repairCorrupt(ctx, t, s, []string{bad, victim}, null, widget("nothing"))
	poll.Until(t, "the corrupt keys off the metric", 10*time.Second, func() bool {
		for _, k := range corrupt {
			if _, ok := corruptGauge(t, widgets.Resource, k); ok {
				return false
			}
		}
		return true
	})
	poll.Until(t, "the repaired key reconciled as an object", 10*time.Second, func() bool { return sightings.handed(null) >= 1 })
	// A good object written where a corrupt value was deleted is an object too.
	if _, err := s.Create(ctx, widget("corrupt")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a new object at a once corrupt key reconciled", 10*time.Second, func() bool { return sightings.handed(bad) >= 1 })
}

// cacheSightings counts, per key, the reconciles that found their key as an
// object in the informer's cache: a corrupt key must never be one. Its
// reconcile waits until it knows the informer, which exists only once the
// manager it may already be called by has started.
type cacheSightings struct {
	inf      *reconcile.Informer
	ready    chan struct{}
	mu       sync.Mutex
	asObject map[string]int
}

// reconcile is the recorder's scripted answer: it looks its key up in the
// cache, counts it if found, and succeeds.
func (c *cacheSightings) reconcile(_ context.Context, req reconcile.Request, _ int) (reconcile.Result, error) {
	<-c.ready
	if _, ok := c.inf.Get(req.Key); ok {
		c.mu.Lock()
		c.asObject[req.Key]++
		c.mu.Unlock()
	}
	return reconcile.Result{}, nil
}

// setInformer tells the reconciles which cache to look in, and lets them run.
func (c *cacheSightings) setInformer(inf *reconcile.Informer) {
	c.inf = inf
	close(c.ready)
}

// handed is how many reconciles of key found it as an object in the cache.
func (c *cacheSightings) handed(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asObject[key]
}

// createGoodWidgets creates the widgets g<from> to g<to-1> and returns their keys.
func createGoodWidgets(ctx context.Context, t *testing.T, s *bus.Store, from, to int) []string {
	t.Helper()
	var good []string
	for i := from; i < to; i++ {
		name := fmt.Sprintf("g%d", i)
		if _, err := s.Create(ctx, widget(name)); err != nil {
			t.Fatal(err)
		}
		good = append(good, "default."+name)
	}
	return good
}

// waitGoodOnlyReconciledAndCached waits until every good widget, those
// written after the corrupt values too, has been reconciled, and the cache
// holds the good widgets and nothing else.
func waitGoodOnlyReconciledAndCached(t *testing.T, rec *recorder, inf *reconcile.Informer, good []string) {
	t.Helper()
	poll.Until(t, "every good widget reconciled, those after the corrupt values too", 15*time.Second, func() bool {
		for _, k := range good {
			if rec.count(k) == 0 {
				return false
			}
		}
		return true
	})
	poll.Until(t, "the cache to hold the good widgets only", 10*time.Second, func() bool {
		if len(inf.Keys()) != len(good) {
			return false
		}
		for _, k := range good {
			if _, ok := inf.Get(k); !ok {
				return false
			}
		}
		return true
	})
}

// checkCorruptReported waits for a CorruptObject Event naming each corrupt
// key, and checks that each is a Warning about the widget of that key and
// that the key is on the homeostat_corrupt_objects metric at 1.
func checkCorruptReported(ctx context.Context, t *testing.T, conn *bus.Conn, corrupt []string) {
	t.Helper()
	events, err := conn.Store(ctx, reconcile.EventKind.StoreSpec())
	if err != nil {
		t.Fatal(err)
	}
	warnings := map[string]kinds.Event{}
	poll.Until(t, "a CorruptObject warning naming each corrupt key", 10*time.Second, func() bool {
		l, err := events.List(ctx, bus.ListOptions{Namespace: "default"})
		if err != nil {
			return false
		}
		for _, o := range l.Items {
			spec, err := kinds.EventOf(o)
			if err != nil || spec.Reason != "CorruptObject" {
				continue
			}
			for _, k := range corrupt {
				if strings.Contains(spec.Message, k) {
					warnings[k] = spec
				}
			}
		}
		return len(warnings) == len(corrupt)
	})
	for _, k := range corrupt {
		w := warnings[k]
		if w.Type != kinds.EventWarning || w.InvolvedObject.Kind != widgets.Kind || "default."+w.InvolvedObject.Name != k {
			t.Errorf("the CorruptObject event of %s: %+v", k, w)
		}
		if v, ok := corruptGauge(t, widgets.Resource, k); !ok || v != 1 {
			t.Errorf("homeostat_corrupt_objects{resource=%q,key=%q} = %v (present %v); want 1", widgets.Resource, k, v, ok)
		}
	}
}

// repairCorrupt repairs corrupt values both ways an operator can: it
// deletes the values of deleteKeys, and writes a good object over the
// value of overwriteKey.
func repairCorrupt(ctx context.Context, t *testing.T, s *bus.Store, deleteKeys []string, overwriteKey string, good *object.Object) {
	t.Helper()
	for _, k := range deleteKeys {
		if _, gone, err := s.Delete(ctx, k, bus.DeleteOptions{}); err != nil || !gone {
			t.Fatalf("deleting the corrupt value of %s: gone %v, %v", k, gone, err)
		}
	}
	repaired, err := json.Marshal(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRaw(ctx, overwriteKey, repaired); err != nil {
		t.Fatal(err)
	}
}

// Work comes from the informer's initial list too: an object written while
// no manager ran (before the first, or between two) is reconciled once one
// starts.
func TestChangesWhileNoManagerRanAreReconciled(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	ctx := context.Background()
	early, err := s.Create(ctx, widget("early"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	r := start(t, conn, reconcile.Options{Reconciler: rec, Resync: -1})
	poll.Until(t, "the widget created before any manager ran reconciled", 10*time.Second, func() bool {
		return rec.count("default.early") >= 1
	})
	r.stop()

	// While no manager runs: one object created, one changed.
	if _, err := s.Create(ctx, widget("meanwhile")); err != nil {
		t.Fatal(err)
	}
	early.Spec = json.RawMessage(`{"size":2}`)
	if _, err := s.Update(ctx, early, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec2 := &recorder{}
	start(t, conn, reconcile.Options{Reconciler: rec2, Resync: -1})
	poll.Until(t, "both changes made while no manager ran reconciled", 10*time.Second, func() bool {
		return rec2.count("default.meanwhile") >= 1 && rec2.count("default.early") >= 1
	})
}
