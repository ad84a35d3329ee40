package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// podWorker owns one pod on the node: it runs the pod through the runtime,
// writes its status, and on deletion stops the containers within the grace
// period and then removes the pod.
type podWorker struct {
	a   *Agent
	key string
	// trace is the trace of the pod's arrival: kept as a value, since a
	// context carrying it took two allocations a pod, for a host's
	// 100,000 pods.
	trace trace.SpanContext

	mu sync.Mutex
	// obj and spec are the pod as it is now, and arrival the status it
	// came to the worker with, until its containers start: only a start
	// reads that (to adopt what runs), and a start that fails reads it
	// again, not the status the agent wrote meanwhile. A *kinds.Pod kept
	// instead, with its status emptied, was 17 MB of a host of 100,000
	// pods.
	obj     *object.Object
	spec    *kinds.PodSpec
	arrival *kinds.PodStatus
	// stored is the latest version we hold, for compare-and-swap: nil
	// once our own write of it has been let go (written), to be read again
	// before the next write; storedRev is the latest revision we know of,
	// held or not.
	stored    *object.Object
	storedRev uint64
	// storedStatus is stored's status decoded, nil until needed when
	// stored came undecoded (read after a conflict) or is our own write:
	// the status writes of ten thousand pods need not decode what was
	// decoded on arrival.
	storedStatus *kinds.PodStatus
	// reported is the status the runtime reported last, until written.
	reported  *kinds.PodStatus
	unwritten bool // reported has not been handed to a writer yet
	started   time.Time

	// What the loop has to act on, and whether a goroutine runs it
	// (podloop.go); the loop's own state is its goroutine's alone.
	signals signal
	active  bool
	ended   bool
	loop    *podLoop
	// done is done once the loop has ended (a wait group for the same
	// reason as podRun's).
	done sync.WaitGroup
}

// newPodWorker makes the worker of pod p, found under key (the caller's
// copy, so that one is kept).
func newPodWorker(a *Agent, key string, p *kinds.Pod, sc trace.SpanContext) *podWorker {
	w := &podWorker{a: a, key: key, obj: p.Object, spec: p.Spec, arrival: &p.Status,
		stored: p.Object, storedStatus: &p.Status, trace: sc}
	w.done.Add(1)
	return w
}

func (w *podWorker) uid() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.obj.Metadata.UID
}

func (w *podWorker) firstContainer() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.spec.Containers) == 0 {
		return ""
	}
	return w.spec.Containers[0].Name
}

func (w *podWorker) update(p *kinds.Pod) {
	w.mu.Lock()
	w.obj, w.spec = p.Object, p.Spec
	if w.later(p.Object) {
		w.stored, w.storedStatus = p.Object, &p.Status
	}
	w.mu.Unlock()
	w.signal(sigUpdate)
}

// arrivalStatus is the status the pod came with, the zero status once
// its containers have started.
func (w *podWorker) arrivalStatus() kinds.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.arrival == nil {
		return kinds.PodStatus{}
	}
	return *w.arrival
}

// current is the pod's object and spec as they are now.
func (w *podWorker) current() (*object.Object, *kinds.PodSpec) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.obj, w.spec
}

// containersStarted lets go of the status the pod came with, once its
// containers have started from it. The first status write reads what it
// keeps of it (storedStatus), a later one the stored version's.
func (w *podWorker) containersStarted() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.arrival = nil
}

// later says whether o is later than the version held, or than the one
// let go (which o may be, read again); w.mu is held.
func (w *podWorker) later(o *object.Object) bool {
	if w.stored == nil {
		return rev(o) >= w.storedRev
	}
	return rev(o) > rev(w.stored)
}

func (w *podWorker) remove() { w.signal(sigRemove) }

func (w *podWorker) wait() { w.done.Wait() }

func rev(o *object.Object) uint64 {
	if o == nil {
		return 0
	}
	r, _ := bus.Revision(o.Metadata.ResourceVersion)
	return r
}

// terminate stops the containers within the grace period; for a pod being
// deleted gracefully it then removes the pod object.
func (w *podWorker) terminate(ctx context.Context, stopRun func(), waitRun func(), deleteObject bool) {
	stopRun()
	waitRun()
	obj, spec := w.current()
	grace := time.Duration(kinds.Int64(spec.TerminationGracePeriodSeconds, 30)) * time.Second
	if g := obj.Metadata.DeletionGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	sctx := context.WithoutCancel(ctx)
	if r := w.a.cfg.Routes; r != nil {
		// Out of rotation first: SIGTERM makes a server stop accepting,
		// and a proxy still sending it connections would see them refused.
		dctx, cancel := context.WithTimeout(sctx, drainWait(grace))
		r.Unrouted(dctx, obj.Metadata.UID)
		cancel()
	}
	w.a.cfg.Runtime.Stop(sctx, obj.Metadata.UID, grace)
	if deleteObject {
		w.removeObject(ctx, w.key, obj.Metadata.UID)
	}
}

// removeObject deletes the stopped pod's object, trying again until it is
// gone or is another pod's (a conflict): no later change would tell the
// agent of a pod left Terminating. The first try outlives an agent that
// stops meanwhile; an agent that starts again finds the pod still marked
// and removes it then.
func (w *podWorker) removeObject(ctx context.Context, key, uid string) {
	sctx := context.WithoutCancel(ctx)
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0))
	for {
		var err error
		w.a.paced(func() { err = w.a.write.Remove(sctx, key, uid) })
		switch {
		case err == nil, errors.Is(err, bus.ErrNotFound), errors.Is(err, bus.ErrConflict):
			return
		case errors.Is(err, bus.ErrForbidden), errors.Is(err, bus.ErrInvalid):
			w.a.log.Warn("removing a stopped pod: refused", "pod", w.key, "err", err)
			return
		}
		d := b.NextBackOff()
		w.a.log.Warn("removing a stopped pod; trying again", "pod", w.key, "in", d, "err", err)
		if !clock.Sleep(ctx, d) {
			return
		}
	}
}

// drainWait bounds how long a stopping pod waits to be out of its
// Services' rotation: half its grace period, at most five seconds, since
// the endpoints controller may be down and the proxies retry a refused
// connection on another endpoint anyway.
func drainWait(grace time.Duration) time.Duration { return min(grace/2, 5*time.Second) }

// report is the runtime's status callback: the worker's loop has the
// latest status written.
func (w *podWorker) report(st kinds.PodStatus) {
	w.mu.Lock()
	w.reported, w.unwritten = &st, true
	w.mu.Unlock()
	w.signal(sigStatus)
}

// statusWrites runs a pod's status writer, one at a time, while there is
// a reported status to write, through the agent's Pace (on a goroutine of
// its own without one): an idle pod holds no goroutine for its status,
// where a host of 100,000 simulated pods held as many, waiting. Only the
// worker's loop calls it.
type statusWrites struct {
	running bool
	ended   func() // called as the writer returns; it must not wait
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// start starts a writer unless one runs or nothing waits to be written;
// the loop calls it again when the writer returns, for a status reported
// as it was returning.
func (s *statusWrites) start(ctx context.Context, w *podWorker) {
	if s.running || !w.hasUnwritten() {
		return
	}
	s.running = true
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.wg.Add(1)
	w.a.goPaced(func() {
		defer s.wg.Done()
		defer cancel()
		for ctx.Err() == nil && w.takeUnwritten() {
			w.writeReported(ctx)
		}
		s.ended()
	})
}

// returned records that the writer returned. Its context, which its
// cancel func holds, goes with it: kept by an idle pod until its next
// write, the contexts were about 30 MB of a host of 100,000 pods.
func (s *statusWrites) returned() {
	s.running, s.cancel = false, nil
}

// stop cancels the write in flight, if any.
func (s *statusWrites) stop() {
	if s.cancel != nil {
		s.cancel()
	}
}

func (w *podWorker) hasUnwritten() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unwritten
}

// takeUnwritten says whether a status waits to be written, and takes it.
func (w *podWorker) takeUnwritten() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.unwritten
	w.unwritten = false
	return was
}

// writeReported writes the latest reported status, by compare-and-swap.
// Paced, its waits after an error hold a worker of the host's: while the
// bus fails, the host's writes slow down with it.
func (w *podWorker) writeReported(ctx context.Context) {
	// Conflicts are tried five times; an unavailable bus or relay until it
	// answers, since a status not written now may never be reported again.
	for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
		err := w.writeStatus(ctx)
		if err == nil || errors.Is(err, bus.ErrNotFound) {
			break
		}
		if !errors.Is(err, bus.ErrConflict) {
			w.a.log.Warn("writing pod status", "pod", w.key, "err", err)
			clock.Sleep(ctx, time.Second)
			if errors.Is(err, bus.ErrUnavailable) {
				attempt--
				continue
			}
		}
		if cur, gerr := w.a.read.Get(ctx, w.key); gerr == nil {
			w.mu.Lock()
			// Unless the watch brought a later version meanwhile.
			if cur.Metadata.UID == w.obj.Metadata.UID && w.later(cur) {
				w.stored, w.storedStatus = cur, nil
			}
			w.mu.Unlock()
		}
	}
}

func (w *podWorker) writeStatus(ctx context.Context) error {
	if err := w.readAgain(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	stored, known, rep, started := w.stored, w.storedStatus, w.reported, w.started
	w.mu.Unlock()
	if rep == nil || stored.Metadata.Deleting() && rep.Phase == "" {
		return nil
	}
	st := known
	if st == nil {
		st = &kinds.PodStatus{}
		_ = stored.DecodeStatus(st)
	}
	next := *rep
	next.HostIP, next.PodIP = w.a.cfg.Address, w.a.cfg.Address
	next.StartTime = st.StartTime
	if next.StartTime == nil {
		next.StartTime = &started
	}
	// Keep the conditions others own (PodScheduled), take ours.
	conds := append([]object.Condition(nil), st.Conditions...)
	now := time.Now().UTC().Truncate(time.Second)
	for _, c := range rep.Conditions {
		object.SetCondition(&conds, c, now)
	}
	next.Conditions = conds
	n := stored.Clone()
	if err := n.SetStatus(next); err != nil {
		return err
	}
	if object.SameEncoding(n.Status, stored.Status) {
		w.written(rep, stored)
		return nil
	}
	updated, err := w.a.write.UpdateStatus(ctx, n, stored)
	if err != nil {
		return err
	}
	w.written(rep, updated.SharingWith(stored))
	return nil
}

// readAgain holds the stored version again when the one written was let
// go, so that there is a version to write over (ErrNotFound when the pod
// is gone or is another pod of the same name).
func (w *podWorker) readAgain(ctx context.Context) error {
	w.mu.Lock()
	held, uid := w.stored != nil, w.obj.Metadata.UID
	w.mu.Unlock()
	if held {
		return nil
	}
	cur, err := w.a.read.Get(ctx, w.key)
	if err != nil {
		return err
	}
	if cur.Metadata.UID != uid {
		return fmt.Errorf("pod %s: %w", w.key, bus.ErrNotFound)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stored == nil && rev(cur) < w.storedRev {
		// The read went to a server behind our own write: try again.
		return fmt.Errorf("pod %s read at %d, before our write at %d: %w", w.key, rev(cur), w.storedRev, bus.ErrConflict)
	}
	if w.later(cur) {
		w.stored, w.storedStatus = cur, nil
	}
	return nil
}

// written records that rep is stored, as stored unless a later version
// is held. Neither the report nor the status decoded from it is kept: a
// later write, after a new report, decodes the stored status again. Nor,
// when no later report waits, is the version written: a later write
// reads it again, as a kubelet reads a pod before each status update.
// Kept, the versions written were about a fifth of the live heap of a
// host of 100,000 idle pods (each one's status JSON and envelope), and
// the reports and their decoding another fifth, for a read saved on a
// write seldom made.
func (w *podWorker) written(rep *kinds.PodStatus, stored *object.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// A version of the same revision is the same; the one held may have
	// its status decoded already.
	if w.later(stored) {
		w.stored, w.storedStatus = stored, nil
	}
	if w.reported == rep {
		w.reported = nil
	}
	if w.reported == nil && w.stored != nil {
		w.storedRev, w.stored, w.storedStatus = rev(w.stored), nil, nil
	}
}
