package nodeagent

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// countingWriter takes every status write and removal at once, keeping
// the statuses written and the keys removed.
type countingWriter struct {
	mu       sync.Mutex
	statuses []kinds.PodStatus
	removed  []string
	last     *object.Object // the version last written
	reads    int            // reads of it
}

func (c *countingWriter) UpdateStatus(_ context.Context, pod, current *object.Object) (*object.Object, error) {
	var st kinds.PodStatus
	if err := pod.DecodeStatus(&st); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.statuses = append(c.statuses, st)
	c.mu.Unlock()
	n := pod.Clone()
	rv, _ := strconv.Atoi(current.Metadata.ResourceVersion)
	n.Metadata.ResourceVersion = strconv.Itoa(rv + 1)
	c.mu.Lock()
	c.last = n
	c.mu.Unlock()
	return n, nil
}

// Get reads the pod as last written, as the store would.
func (c *countingWriter) Get(_ context.Context, key string) (*object.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.last == nil || c.last.Key() != key {
		return nil, fmt.Errorf("%s: %w", key, bus.ErrNotFound)
	}
	return c.last, nil
}

func (c *countingWriter) Remove(_ context.Context, key, _ string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removed = append(c.removed, key)
	return nil
}

// written is the phases written, in order.
func (c *countingWriter) written() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	phases := make([]string, len(c.statuses))
	for i, st := range c.statuses {
		phases[i] = st.Phase
	}
	return phases
}

func (c *countingWriter) writtenStatuses() []kinds.PodStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.statuses)
}

func (w *podWorker) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.active && w.signals == 0
}

// settled says the worker's loop is idle, no status writer of its runs,
// and its Run has returned, holding no context: what a started pod
// whose containers were simulated reaches. The loop's own state is read
// once it is idle, under the lock it went idle under.
func (w *podWorker) settled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active || w.signals != 0 || w.loop == nil || w.loop.run == nil {
		return false
	}
	return !w.loop.writes.running && w.loop.run.cancel == nil
}

// runHeld says whether the worker's run holds its Run's context (false
// before the run starts).
func (w *podWorker) runHeld() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.loop != nil && w.loop.run != nil && w.loop.run.cancel != nil
}

func (w *podWorker) objNow() *object.Object {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.obj
}

func (w *podWorker) isEnded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// endedCh closes once the worker's loop has ended.
func (w *podWorker) endedCh() <-chan struct{} {
	ch := make(chan struct{})
	go func() { defer close(ch); w.wait() }()
	return ch
}

// simulatedWorker is a started worker of a pod on a simulated node.
func simulatedWorker(t *testing.T, ctx context.Context, name string) (*Agent, *podWorker, *countingWriter) {
	t.Helper()
	a, w, rec := newSimulatedWorker(t, ctx, name)
	w.start(ctx)
	return a, w, rec
}

// newSimulatedWorker is the worker, not started, of a pod bound to a
// simulated node, with a writer that takes each write at once.
func newSimulatedWorker(t *testing.T, ctx context.Context, name string) (*Agent, *podWorker, *countingWriter) {
	t.Helper()
	return newWorkerOn(t, NewSimulated(0), name, scheduled)
}

// scheduled is the status of a pod the scheduler has bound.
const scheduled = `{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"True"}]}`

// newWorkerOn is the worker, not started, of a pod bound to a node whose
// runtime is rt, the pod's status being status, with a writer that takes
// each write at once.
func newWorkerOn(t *testing.T, rt Runtime, name, status string) (*Agent, *podWorker, *countingWriter) {
	t.Helper()
	rec := &countingWriter{}
	a := &Agent{cfg: Config{NodeName: "n1", Address: "127.0.0.1", Runtime: rt}, log: slog.Default(),
		write: rec, read: rec, workers: map[string]*podWorker{}}
	o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: name, Namespace: "default", UID: "uid-" + name, ResourceVersion: "1"},
		Spec:   []byte(`{"containers":[{"name":"c","command":["sleep","infinity"]}],"nodeName":"n1"}`),
		Status: []byte(status)}
	p, err := kinds.DecodePod(o)
	if err != nil {
		t.Fatal(err)
	}
	w := newPodWorker(a, p.Key(), p, trace.SpanContext{})
	a.workers[p.Key()] = w
	return a, w, rec
}

// A running pod with nothing to do holds no goroutine; what comes to it
// later (a status, its deletion) starts one, which acts and goes.
func TestIdlePodHoldsNoGoroutine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, w, rec := simulatedWorker(t, ctx, "p1")
	// The simulated Run returns once it has reported Running, on a
	// goroutine of its own: its context goes as it returns.
	poll.Until(t, "Running written, the worker settled and its Run returned", 10*time.Second, func() bool {
		got := rec.written()
		return len(got) == 1 && got[0] == kinds.PodRunning && w.settled()
	})
	w.mu.Lock()
	report, decoded, writer, written := w.reported, w.storedStatus, w.loop.writes.cancel, w.stored
	arrival, run := w.arrival, w.loop.run.cancel
	w.mu.Unlock()
	if report != nil || decoded != nil || writer != nil || written != nil {
		t.Fatalf("an idle pod holds its written report (%v), its status decoded (%v), its writer's context (%v) or the version written (%v)",
			report != nil, decoded != nil, writer != nil, written != nil)
	}
	if arrival != nil || run != nil {
		t.Fatalf("a started pod's worker holds the status it came with decoded (%v), or its returned Run's context (%v)", arrival != nil, run != nil)
	}
	if first := rec.writtenStatuses()[0]; object.FindCondition(first.Conditions, kinds.PodScheduled) == nil {
		t.Fatalf("the first write lost the scheduler's condition it came with: %+v", first.Conditions)
	}

	// A report without conditions keeps those written before, read from
	// the store again.
	w.report(kinds.PodStatus{Phase: kinds.PodSucceeded})
	poll.Until(t, "the next report written and the worker settled again", 10*time.Second, func() bool {
		return len(rec.written()) == 2 && w.settled()
	})
	rec.mu.Lock()
	reads := rec.reads
	rec.mu.Unlock()
	if reads != 1 {
		t.Fatalf("the second write read the pod %d times, want once", reads)
	}
	sts := rec.writtenStatuses()
	if len(sts[0].Conditions) == 0 || !reflect.DeepEqual(sts[1].Conditions, sts[0].Conditions) || !reflect.DeepEqual(sts[1].StartTime, sts[0].StartTime) {
		t.Fatalf("the second write has conditions %+v and start %v, want the first's %+v and %v",
			sts[1].Conditions, sts[1].StartTime, sts[0].Conditions, sts[0].StartTime)
	}
	if w.isEnded() {
		t.Fatal("the worker ended with its pod still on the node")
	}

	// Deleted: the containers stop and the pod object is removed.
	next := w.objNow().Clone()
	now := time.Now()
	next.Metadata.DeletionTimestamp = &now
	p, err := kinds.DecodePod(next)
	if err != nil {
		t.Fatal(err)
	}
	w.update(p)
	within(t, "the worker's end after the pod's deletion", w.endedCh())
	rec.mu.Lock()
	removed := append([]string(nil), rec.removed...)
	rec.mu.Unlock()
	if len(removed) != 1 || removed[0] != "default.p1" {
		t.Fatalf("removed %v, want the pod", removed)
	}
	a.mu.Lock()
	_, kept := a.workers["default.p1"]
	a.mu.Unlock()
	if kept {
		t.Fatal("the agent still has the ended worker")
	}
	w.signal(sigUpdate) // heard by no one
	if !w.idle() {
		t.Fatal("a signal after the end started the loop again")
	}
}

// An idle worker ends when its agent stops, or its pod leaves the node;
// either way the pod's object stays.
func TestIdleWorkerEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(w *podWorker, stopAgent context.CancelFunc)
	}{
		{"with its agent", func(w *podWorker, stopAgent context.CancelFunc) { stopAgent(); w.stop() }},
		{"when its pod leaves the node", func(w *podWorker, _ context.CancelFunc) { w.remove() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, w, rec := simulatedWorker(t, ctx, "p2")
			poll.Until(t, "the worker idle", 10*time.Second, func() bool { return len(rec.written()) == 1 && w.idle() })
			tc.end(w, cancel)
			within(t, "the worker's end", w.endedCh())
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.removed) != 0 {
				t.Fatalf("removed the pod's object %v", rec.removed)
			}
		})
	}
}

// Many running pods with nothing to do hold no goroutine each.
func TestIdlePodsHoldNoGoroutines(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := runtime.NumGoroutine()
	const pods = 200
	var ws []*podWorker
	for i := range pods {
		_, w, _ := simulatedWorker(t, ctx, fmt.Sprintf("p%d", i))
		ws = append(ws, w)
	}
	poll.Until(t, "every worker idle", 10*time.Second, func() bool {
		for _, w := range ws {
			if !w.idle() {
				return false
			}
		}
		return true
	})
	// Goroutines that are not the workers' (the runtime's, the test's)
	// come and go; a goroutine a worker would be 200 more.
	poll.Until(t, "the goroutines of idle workers gone", 10*time.Second, func() bool {
		return runtime.NumGoroutine() < before+pods/4
	})
}

// A pod removed, or its agent stopped, as its worker starts is stopped
// all the same: the signal waits for the pod to have run.
func TestWorkerSignalledAsItStarts(t *testing.T) {
	for i := range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		_, w, _ := newSimulatedWorker(t, ctx, fmt.Sprint("p", i))
		go func() {
			if i%2 == 1 {
				cancel()
				w.stop()
				return
			}
			for !w.isEnded() { // until one lands as the worker starts
				w.remove()
				runtime.Gosched()
			}
		}()
		w.start(ctx)
		within(t, "the worker's end", w.endedCh())
		cancel()
	}
}

// A pod whose Run waits on its context (as a real runtime's watches its
// processes, here a simulated one's start delay) has it cancelled as the
// pod leaves the node, or its agent stops: the worker ends then, not when
// the Run would have returned by itself.
func TestWaitingRunIsStopped(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(w *podWorker, stopAgent context.CancelFunc)
	}{
		{"when its pod leaves the node", func(w *podWorker, _ context.CancelFunc) { w.remove() }},
		{"with its agent", func(w *podWorker, stopAgent context.CancelFunc) { stopAgent(); w.stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, w, rec := newWorkerOn(t, NewSimulated(time.Hour), "p", scheduled)
			w.start(ctx)
			poll.Until(t, "the pod reported Pending, its Run waiting", 10*time.Second, func() bool {
				got := rec.written()
				return len(got) == 1 && got[0] == kinds.PodPending && w.runHeld()
			})
			tc.end(w, cancel)
			within(t, "the worker's end", w.endedCh())
			if w.runHeld() {
				t.Fatal("the ended worker still holds its Run's context")
			}
		})
	}
}

// A start hands the runtime the status the pod came with: a simulated pod
// whose status says its container runs is adopted, and nothing written.
func TestStartAdoptsFromTheStatusThePodCameWith(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := `{"phase":"Running","containerStatuses":[{"name":"c","state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}},"ready":true,"restartCount":0}]}`
	for _, tc := range []struct {
		status string
		writes int
	}{{running, 0}, {scheduled, 1}} {
		_, w, rec := newWorkerOn(t, NewSimulated(0), "p", tc.status)
		w.start(ctx)
		poll.Until(t, "the worker settled", 10*time.Second, w.settled)
		if got := rec.written(); len(got) != tc.writes {
			t.Fatalf("a pod that came with %s: written %v, want %d writes", tc.status, got, tc.writes)
		}
	}
}
