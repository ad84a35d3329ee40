package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
	"github.com/homeostat/homeostat/tracing"
)

// A worker that dies mid-reconcile (its connection gone, never acking) has
// its key redelivered to another runtime once the claim lapses.
func TestDeadWorkerKeyIsRedelivered(t *testing.T) {
	srv := bustest.Conn(t)
	s := store(t, srv)
	connA := bustest.Client(t, srv)
	blocked := make(chan struct{})
	var once sync.Once
	recA := &recorder{fn: func(ctx context.Context, _ reconcile.Request, _ int) (reconcile.Result, error) {
		once.Do(func() { close(blocked) })
		<-ctx.Done()
		return reconcile.Result{}, ctx.Err()
	}}
	a := start(t, connA, reconcile.Options{Reconciler: recA, AckWait: time.Second, Resync: -1})
	if _, err := s.Create(context.Background(), widget("orphaned")); err != nil {
		t.Fatal(err)
	}
	<-blocked
	connA.Abandon() // the process dies: no ack, no sign of life
	recB := &recorder{}
	start(t, bustest.Client(t, srv), reconcile.Options{Reconciler: recB, AckWait: time.Second, Resync: -1})
	poll.Until(t, "redelivery to the live runtime", 15*time.Second, func() bool { return recB.count("default.orphaned") >= 1 })
	a.stop()
}

// A reconcile longer than AckWait keeps its claim: no second worker gets it.
func TestLongReconcileKeepsItsClaim(t *testing.T) {
	srv := bustest.Conn(t)
	s := store(t, srv)
	finished := make(chan struct{}, 2)
	slow := func() *recorder {
		return &recorder{fn: func(ctx context.Context, _ reconcile.Request, _ int) (reconcile.Result, error) {
			defer func() { finished <- struct{}{} }()
			select {
			case <-time.After(2500 * time.Millisecond):
			case <-ctx.Done():
			}
			return reconcile.Result{}, nil
		}}
	}
	a, b := slow(), slow()
	start(t, bustest.Client(t, srv), reconcile.Options{Reconciler: a, AckWait: time.Second, Resync: -1})
	start(t, bustest.Client(t, srv), reconcile.Options{Reconciler: b, AckWait: time.Second, Resync: -1})
	if _, err := s.Create(context.Background(), widget("long")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-finished:
	case <-time.After(15 * time.Second):
		t.Fatal("the reconcile did not finish")
	}
	// It ran two and a half AckWaits; had the claim lapsed, the other
	// runtime would have started it meanwhile.
	if n := a.count("default.long") + b.count("default.long"); n != 1 {
		t.Fatalf("the key was reconciled %d times while claimed", n)
	}
}

// Shutdown drains: a reconcile in flight finishes and is acked, not redelivered.
func TestShutdownDrainsInFlight(t *testing.T) {
	srv := bustest.Conn(t)
	s := store(t, srv)
	started := make(chan struct{})
	var finished atomic.Bool
	var once sync.Once
	rec := &recorder{fn: func(ctx context.Context, _ reconcile.Request, _ int) (reconcile.Result, error) {
		once.Do(func() { close(started) })
		select {
		case <-time.After(500 * time.Millisecond):
			finished.Store(true)
			return reconcile.Result{}, nil
		case <-ctx.Done():
			return reconcile.Result{}, ctx.Err()
		}
	}}
	r := start(t, bustest.Client(t, srv), reconcile.Options{Reconciler: rec, Resync: -1})
	if _, err := s.Create(context.Background(), widget("drain")); err != nil {
		t.Fatal(err)
	}
	<-started
	r.stop()
	if !finished.Load() {
		t.Fatal("shutdown returned before the reconcile in flight finished")
	}
	q, err := srv.Queue(context.Background(), bus.QueueSpec{Name: "widgets"})
	if err != nil {
		t.Fatal(err)
	}
	// The ack was confirmed before the controller stopped (it waits for
	// what its workers left settling): nothing may be left in flight (it
	// would stay so for AckWait, 30s).
	pending, inFlight, err := q.Depth(context.Background())
	if err != nil || pending != 0 || inFlight != 0 {
		t.Fatalf("after shutdown: %d pending, %d in flight (err %v), want none", pending, inFlight, err)
	}
}

// Three runtimes over one queue split the keys with no coordination.
func TestRuntimesSplitKeys(t *testing.T) {
	srv := bustest.Conn(t)
	s := store(t, srv)
	var recs []*recorder
	for range 3 {
		r := &recorder{fn: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
			time.Sleep(2 * time.Millisecond) // a little work, so that every runtime pulls
			return reconcile.Result{}, nil
		}}
		recs = append(recs, r)
		start(t, bustest.Client(t, srv), reconcile.Options{Reconciler: r, Workers: 2, Resync: -1})
	}
	const n = 90
	for i := range n {
		if _, err := s.Create(context.Background(), widget(fmt.Sprintf("k%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "every key reconciled", 15*time.Second, func() bool {
		for i := range n {
			k := fmt.Sprintf("default.k%d", i)
			if recs[0].count(k)+recs[1].count(k)+recs[2].count(k) == 0 {
				return false
			}
		}
		return true
	})
	for i, r := range recs {
		if r.count("") == 0 {
			t.Errorf("runtime %d reconciled nothing", i)
		}
	}
}

// Resync repairs what changed behind the controller's back: a write to a
// bucket it does not watch.
func TestResyncRepairs(t *testing.T) {
	srv := bustest.Conn(t)
	s := store(t, srv)
	mirror, err := srv.Store(context.Background(), bus.StoreSpec{Resource: "mirrors.test", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{fn: func(ctx context.Context, req reconcile.Request, _ int) (reconcile.Result, error) {
		_, err := mirror.Create(ctx, &object.Object{Kind: "Mirror", Metadata: object.Meta{Name: req.Name, Namespace: req.Namespace}})
		if errors.Is(err, bus.ErrAlreadyExists) {
			err = nil
		}
		return reconcile.Result{}, err
	}}
	start(t, bustest.Client(t, srv), reconcile.Options{Reconciler: rec, Resync: 300 * time.Millisecond})
	if _, err := s.Create(context.Background(), widget("m")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the mirror", 5*time.Second, func() bool { _, err := mirror.Get(context.Background(), "default.m"); return err == nil })
	if _, _, err := mirror.Delete(context.Background(), "default.m", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "resync to restore the mirror", 10*time.Second, func() bool {
		_, err := mirror.Get(context.Background(), "default.m")
		return err == nil
	})
}

// A reconcile span continues the trace of the write that caused it.
func TestReconcileContinuesTheWritersTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{Service: "test", Exporters: []trace.SpanExporter{exp}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	srv := bustest.Conn(t)
	s := store(t, srv)
	start(t, srv, reconcile.Options{Reconciler: &recorder{fn: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
		return reconcile.Result{}, errors.New("fail once so the span has an error")
	}}, Backoff: reconcile.Backoff{Initial: time.Hour, Max: time.Hour, Multiplier: 2}, Resync: -1})
	ctx, span := tracing.Tracer().Start(context.Background(), "apply")
	if _, err := s.Create(ctx, widget("traced")); err != nil {
		t.Fatal(err)
	}
	span.End()
	poll.Until(t, "a reconcile span", 5*time.Second, func() bool {
		for _, sp := range exp.GetSpans() {
			if sp.Name == "reconcile widgets" {
				return true
			}
		}
		return false
	})
	for _, sp := range exp.GetSpans() {
		if sp.Name != "reconcile widgets" {
			continue
		}
		if sp.SpanContext.TraceID() != span.SpanContext().TraceID() || sp.Parent.SpanID() != span.SpanContext().SpanID() {
			t.Fatalf("reconcile span is not a child of the writer's span: trace %s parent %s", sp.SpanContext.TraceID(), sp.Parent.SpanID())
		}
		attrs := map[string]string{}
		for _, a := range sp.Attributes {
			attrs[string(a.Key)] = a.Value.String()
		}
		for _, k := range []string{"controller", "kind", "key", "revision", "attempt", "result"} {
			if attrs[k] == "" {
				t.Errorf("span lacks attribute %s: %v", k, attrs)
			}
		}
		if attrs["result"] != "error" || attrs["key"] != "default.traced" {
			t.Errorf("span attributes: %v", attrs)
		}
	}
}
