package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

var widgets = reconcile.Kind{Kind: "Widget", APIVersion: "test/v1", Resource: "widgets.test", Namespaced: true}

// recorder is a Reconciler that logs calls and answers with a scripted function.
type recorder struct {
	mu    sync.Mutex
	calls []call
	fn    func(ctx context.Context, req reconcile.Request, n int) (reconcile.Result, error)
}

type call struct {
	key string
	at  time.Time
}

func (r *recorder) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	r.calls = append(r.calls, call{req.Key, time.Now()})
	n := 0
	for _, c := range r.calls {
		if c.key == req.Key {
			n++
		}
	}
	fn := r.fn
	r.mu.Unlock()
	if fn == nil {
		return reconcile.Result{}, nil
	}
	return fn(ctx, req, n)
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if key == "" || c.key == key {
			n++
		}
	}
	return n
}

func (r *recorder) times(key string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, c := range r.calls {
		if c.key == key {
			out = append(out, c.at)
		}
	}
	return out
}

type runtime struct {
	mgr  *reconcile.Manager
	ctrl *reconcile.Controller
	stop func()
	done chan error
}

// start runs a manager with one controller over conn.
func start(t *testing.T, conn *bus.Conn, opts reconcile.Options) *runtime {
	t.Helper()
	return startAs(t, conn, "", opts)
}

// startAs runs a manager named identity (new when empty) with one
// controller over conn.
func startAs(t *testing.T, conn *bus.Conn, identity string, opts reconcile.Options) *runtime {
	t.Helper()
	return startWith(t, reconcile.ManagerOptions{Bus: conn, DrainTimeout: 5 * time.Second, Identity: identity}, opts)
}

// startWith runs a manager of mopts with one controller.
func startWith(t *testing.T, mopts reconcile.ManagerOptions, opts reconcile.Options) *runtime {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := reconcile.NewManager(ctx, mopts)
	if err != nil {
		t.Fatal(err)
	}
	if opts.For.Resource == "" {
		opts.For = widgets
	}
	if opts.Name == "" {
		opts.Name = "widgets"
	}
	ctrl, err := mgr.Add(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &runtime{mgr: mgr, ctrl: ctrl, done: make(chan error, 1)}
	go func() { r.done <- mgr.Run(ctx) }()
	select {
	case <-mgr.Ready():
	case err := <-r.done:
		t.Fatalf("manager ended before it was ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("manager not ready within 10s")
	}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-r.done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

func store(t *testing.T, conn *bus.Conn) *bus.Store {
	t.Helper()
	s, err := conn.Store(context.Background(), widgets.StoreSpec())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func widget(name string) *object.Object {
	return &object.Object{APIVersion: "test/v1", Kind: "Widget",
		Metadata: object.Meta{Name: name, Namespace: "default"}, Spec: json.RawMessage(`{"size":1}`)}
}

func rev(o *object.Object) uint64 {
	n, _ := strconv.ParseUint(o.Metadata.ResourceVersion, 10, 64)
	return n
}

func TestReconcilesEveryWriteWithFreshCache(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	var stale []string
	var mu sync.Mutex
	var inf atomic.Pointer[reconcile.Informer]
	rec := &recorder{}
	rec.fn = func(ctx context.Context, req reconcile.Request, _ int) (reconcile.Result, error) {
		// The cache must hold at least the version that was just written.
		live, err := s.Get(ctx, req.Key)
		if err != nil {
			return reconcile.Result{}, nil
		}
		cached, ok := inf.Load().Get(req.Key)
		if !ok || rev(cached) < rev(live) {
			mu.Lock()
			stale = append(stale, req.Key)
			mu.Unlock()
		}
		return reconcile.Result{}, nil
	}
	r := start(t, conn, reconcile.Options{Reconciler: rec, Resync: -1})
	inf.Store(r.mgr.Informer(widgets))
	for i := range 20 {
		if _, err := s.Create(context.Background(), widget(fmt.Sprintf("w%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "every widget reconciled", 10*time.Second, func() bool {
		for i := range 20 {
			if rec.count(fmt.Sprintf("default.w%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if len(stale) > 0 {
		t.Fatalf("reconciled from a cache older than the triggering write: %v", stale)
	}
}

func TestFailingKeyBacksOffAndRecordsRetryState(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	fail := true
	var mu sync.Mutex
	rec := &recorder{fn: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return reconcile.Result{}, errors.New("boom: the thing is broken")
		}
		return reconcile.Result{}, nil
	}}
	b := reconcile.Backoff{Initial: 20 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}
	start(t, conn, reconcile.Options{Reconciler: rec, Backoff: b, Resync: -1})
	created, err := s.Create(context.Background(), widget("bad"))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "six attempts", 10*time.Second, func() bool { return rec.count("default.bad") >= 6 })
	times := rec.times("default.bad")
	for i := 1; i < 6; i++ {
		gap, want := times[i].Sub(times[i-1]), b.Delay(uint64(i))
		if gap < want {
			t.Errorf("gap before attempt %d is %s, less than the backoff %s", i+1, gap, want)
		}
	}
	// The retry state is kept outside the object, so the object is untouched.
	got, err := s.Get(context.Background(), "default.bad")
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata.ResourceVersion != created.Metadata.ResourceVersion {
		t.Fatalf("retry state changed the object: revision %s -> %s", created.Metadata.ResourceVersion, got.Metadata.ResourceVersion)
	}
	recs, err := conn.RetryRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	record := func() (json.RawMessage, bool) {
		m, err := recs.ForObject(context.Background(), widgets.Resource, "default.bad")
		raw, ok := m["widgets"]
		return raw, err == nil && ok
	}
	var rr reconcile.RetryRecord
	poll.Until(t, "a retry record", 5*time.Second, func() bool {
		raw, ok := record()
		return ok && json.Unmarshal(raw, &rr) == nil && rr.Attempts >= 5
	})
	if rr.LastError != "boom: the thing is broken" || rr.NextRetry == nil || !rr.NextRetry.After(rr.LastAttempt) || len(rr.TraceID) != 32 {
		t.Fatalf("retry record: %+v", rr)
	}
	// Once it works, the record goes.
	mu.Lock()
	fail = false
	mu.Unlock()
	poll.Until(t, "the record to be cleared", 10*time.Second, func() bool {
		_, ok := record()
		return !ok
	})
}

func TestTerminalErrorIsNotRetried(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	rec := &recorder{fn: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
		return reconcile.Result{}, reconcile.Terminal(errors.New("spec can never work"))
	}}
	start(t, conn, reconcile.Options{Reconciler: rec, Backoff: reconcile.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 2}, Resync: -1})
	o, err := s.Create(context.Background(), widget("t"))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "one attempt", 5*time.Second, func() bool { return rec.count("default.t") == 1 })
	// A later write of another key proves the queue moved on; t stays at one attempt.
	if _, err := s.Create(context.Background(), widget("other")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the other key", 5*time.Second, func() bool { return rec.count("default.other") >= 1 })
	if n := rec.count("default.t"); n != 1 {
		t.Fatalf("terminal error retried: %d attempts", n)
	}
	// Changing the object tries again.
	o.Spec = json.RawMessage(`{"size":2}`)
	if _, err := s.Update(context.Background(), o, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a new attempt after the change", 5*time.Second, func() bool { return rec.count("default.t") == 2 })
}

func TestRequeueAfter(t *testing.T) {
	conn := bustest.Conn(t)
	s := store(t, conn)
	rec := &recorder{fn: func(_ context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
		if n < 3 {
			return reconcile.Result{RequeueAfter: 50 * time.Millisecond}, nil
		}
		return reconcile.Result{}, nil
	}}
	start(t, conn, reconcile.Options{Reconciler: rec, Resync: -1})
	if _, err := s.Create(context.Background(), widget("r")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "three reconciles", 5*time.Second, func() bool { return rec.count("default.r") == 3 })
	ts := rec.times("default.r")
	if ts[2].Sub(ts[1]) < 50*time.Millisecond {
		t.Fatalf("requeued sooner than asked: %s", ts[2].Sub(ts[1]))
	}
}
