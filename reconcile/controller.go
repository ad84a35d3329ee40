package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/tracing"
)

// Options configure a controller.
type Options struct {
	// Name identifies the controller: its queue, metrics and retry records.
	Name string
	// For is the kind whose keys the controller reconciles. Every write of
	// it that the kind's informer sees is enqueued unless NoSource is set. A
	// controller over several kinds sets NoSource, leaves For empty, and
	// gets the raw key of whatever it enqueued.
	For      Kind
	NoSource bool
	// Reconciler does the work.
	Reconciler Reconciler
	// Workers reconcile at once in this process (default 4).
	Workers int
	// Backoff after errors (default DefaultBackoff).
	Backoff Backoff
	// Resync re-enqueues every key this often, with jitter (default 5m;
	// negative disables).
	Resync time.Duration
	// AckWait is how long a key stays claimed without a sign of life
	// before it goes to another worker (default 30s).
	AckWait time.Duration
	// CoalesceEvery folds direct enqueues for this long (default 20ms).
	CoalesceEvery time.Duration
	// CacheWait bounds the wait for caches to reach a triggering revision
	// (default 5s).
	CacheWait time.Duration
	// Exclusive keeps each key in one process at a time, for reconcilers
	// whose decisions span several objects (see claimer).
	Exclusive bool
}

// Controller is a running controller: a queue and its workers.
type Controller struct {
	opts  Options
	mgr   *Manager
	queue *bus.Queue
	enq   *enqueuer
	log   *slog.Logger
	keys  keyLocks
	// claims is set for an Exclusive controller.
	claims *claimer
	// written is what each key's last pass here wrote, for its next pass
	// to wait for (ownWrites).
	written ownWrites
	// author marks the status writes of this process's passes (ownStatus):
	// the controller's name and a tag of the process, since another
	// process's pass may have read its object before this one's write.
	author string
	// settling confirms acknowledgements and gives claims up apart from
	// the workers.
	settling *settling
}

// keyLocks keeps two workers of one process off the same key, as
// client-go's workqueue does: the second waits, then works from a fresher
// cache. (Across processes it can still happen: reconcilers are safe
// against it, or their controller is Exclusive.)
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

func (k *keyLocks) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		l.users--
		if l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// Name is the controller's name.
func (c *Controller) Name() string { return c.opts.Name }

// Enqueue schedules key for reconciliation once resource has reached the
// change's revision in this process's caches (resource "" for none), in
// the trace of change.
func (c *Controller) Enqueue(key string, change *Change, resource string) {
	if change == nil {
		c.enq.add(key, "", 0, trace.SpanContext{})
		return
	}
	c.enq.add(key, resource, change.Revision, change.Trace)
}

// EnqueueKey schedules key with no revision to wait for.
func (c *Controller) EnqueueKey(key string) { c.enq.add(key, "", 0, trace.SpanContext{}) }

// enqueueChanges makes every change of the controller's kind work for it,
// the initial list included: at start every key is enqueued with its
// current revision. Every process running the controller does so; the
// queue stores each change once, and a key still waiting in it (backing
// off, say) keeps its place.
//
// Its own writes of a status alone are the exception (ownStatus): the
// pass of this process that wrote one had read everything the status was
// made from, what changes since comes as changes of their own, and the
// key's next pass here reads the write (awaitOwnStatus).
func (c *Controller) enqueueChanges(inf *Informer) {
	inf.OnChange(func(ch Change) {
		if ownStatus(ch, c.author) {
			return
		}
		c.Enqueue(ch.Object().Key(), &ch, inf.Kind().Resource)
	})
}

// ownStatus reports whether ch is a change of the status alone of the key
// that a pass marked by author reconciled. The mark (bus.Author) says so
// of the object its writer replaced; the informer's last state must
// differ from the new one in the status alone too, so that a change the
// informer did not see in between (across a relist, say) still counts.
func ownStatus(ch Change, author string) bool {
	return ch.StatusBy != "" && ch.StatusBy == author && ch.Old != nil && ch.New != nil &&
		object.StatusOnly(ch.Old, ch.New)
}

func (c *Controller) run(ctx context.Context, workCtx context.Context) error {
	errs := make(chan error, 3)
	go func() { c.enq.run(ctx); errs <- nil }()
	go func() { c.resync(ctx); errs <- nil }()
	go func() { c.watchDepth(ctx); errs <- nil }()
	err := c.queue.Consume(ctx, c.opts.Workers, func(d *bus.Delivery) { c.handle(workCtx, d) })
	c.settling.wait()
	for range 3 {
		<-errs
	}
	return err
}

// resync enqueues every key every Resync period (±10%), the safety net
// for anything missed.
func (c *Controller) resync(ctx context.Context) {
	if c.opts.Resync < 0 || c.opts.For.Resource == "" {
		return
	}
	inf := c.mgr.Informer(c.opts.For)
	for {
		jitter := time.Duration(float64(c.opts.Resync) * (0.9 + 0.2*rand.Float64()))
		if !clock.Sleep(ctx, jitter) {
			return
		}
		for _, k := range inf.Keys() {
			c.EnqueueKey(k)
		}
	}
}

func (c *Controller) watchDepth(ctx context.Context) {
	for clock.Sleep(ctx, 2*time.Second) {
		if p, f, err := c.queue.Depth(ctx); err == nil {
			queueDepth.WithLabelValues(c.opts.Name).Set(float64(p))
			queueInFlight.WithLabelValues(c.opts.Name).Set(float64(f))
		}
	}
}

// handle reconciles one delivery: wait for the caches, reconcile in a span
// while keeping the claim alive, then ack, requeue or back off.
func (c *Controller) handle(ctx context.Context, d *bus.Delivery) {
	defer c.keys.lock(d.Key)()
	claim, release, ok := c.claim(ctx, d)
	if !ok {
		return
	}
	defer release()
	if !c.cachesReady(ctx, d) {
		return
	}
	c.awaitOwnWrites(ctx, d.Key)
	req := RequestFor(c.opts.For, d.Key)
	rev := d.MinRevisions[c.opts.For.Resource]
	sctx, span := tracing.Tracer().Start(d.Context(ctx), "reconcile "+c.opts.Name,
		trace.WithAttributes(
			attribute.String("controller", c.opts.Name), attribute.String("kind", c.opts.For.Kind),
			attribute.String("key", d.Key), attribute.Int64("revision", int64(rev)), attribute.Int64("attempt", int64(d.Attempt)),
		))
	stop := c.keepAlive(sctx, d)
	start := time.Now()
	traceID := span.SpanContext().TraceID().String()
	entry := HistoryEntry{Time: start.UTC(), Controller: c.opts.Name, Kind: c.opts.For.Kind, Key: d.Key, Revision: rev,
		Attempt: d.Attempt, TraceID: traceID, Worker: c.mgr.opts.Identity}
	// The reconcile ends if its claim is lost; what follows it does not.
	rctx, cancel := context.WithCancelCause(sctx)
	stopClaim := context.AfterFunc(claim, func() { cancel(context.Cause(claim)) })
	var changes bus.Changes
	author := bus.NewAuthor(c.author, c.opts.For.Resource, d.Key)
	rctx = bus.WithAuthor(bus.WithChanges(rctx, &changes), author)
	marked := c.markInProgress(entry)
	res, err := c.call(rctx, req)
	marked.Stop()
	stopClaim()
	cancel(nil)
	elapsed := time.Since(start)
	c.awaitOwnStatus(sctx, d.Key, author.Wrote())
	c.written.remember(d.Key, changes.Latest(), c.shows)
	stop()
	c.enq.passed(d.Key, elapsed)
	result := c.settle(sctx, d, res, err, traceID, rev)
	c.recordHistory(entry, elapsed, res, err, changes.Summary())
	span.SetAttributes(attribute.String("result", result))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	reconcileDuration.WithLabelValues(c.opts.Name, result).Observe(elapsed.Seconds())
}

// awaitOwnStatus holds the key until the controller's informer has the
// status its pass wrote at rev, whose return enqueues nothing
// (enqueueChanges), so that the key's next pass in this process reads it
// rather than the object before it: a pass that found the status it
// computes already in a stale copy would write nothing, and the status
// would stay as this pass left it. A cache that does not get there in
// time gets the key again, behind the write, as its return would have.
func (c *Controller) awaitOwnStatus(ctx context.Context, key string, rev uint64) {
	if rev == 0 {
		return
	}
	if inf := c.mgr.informerOf(c.opts.For.Resource); inf == nil || inf.WaitForRevision(ctx, rev, c.opts.CacheWait) {
		return
	}
	c.enq.add(key, c.opts.For.Resource, rev, trace.SpanContext{})
}

// markInProgress records, should the reconcile of entry still run after
// inProgressAfter, that it is in progress, and where: a reconcile that
// hangs is then seen with its worker, not only once it ends.
func (c *Controller) markInProgress(entry HistoryEntry) *time.Timer {
	return time.AfterFunc(inProgressAfter, func() {
		entry.Outcome = OutcomeInProgress
		c.mgr.history.append(c.opts.For.Resource, entry)
	})
}

// recordHistory appends the entry of a reconcile that ended.
func (c *Controller) recordHistory(entry HistoryEntry, elapsed time.Duration, res Result, err error, changes []bus.ChangeSummary) {
	entry.Outcome = outcome(res, err, changes)
	entry.Changes = changes
	entry.DurationMS = float64(elapsed.Microseconds()) / 1000
	if err != nil {
		entry.Error = err.Error()
	}
	if res.RequeueAfter > 0 && err == nil {
		entry.RequeueAfter = res.RequeueAfter.String()
	}
	c.mgr.history.append(c.opts.For.Resource, entry)
}

// claim takes the key's claim for an Exclusive controller and returns a
// context that ends if the claim is lost, and its release. A key held
// elsewhere is handed back to try again soon (ok false).
func (c *Controller) claim(ctx context.Context, d *bus.Delivery) (claim context.Context, release func(), ok bool) {
	if c.claims == nil {
		return ctx, func() {}, true
	}
	ls, err := c.claims.take(ctx, c.opts.Name, d.Key)
	if err != nil {
		claimWaits.WithLabelValues(c.opts.Name).Inc()
		c.log.Debug("key claimed elsewhere; trying it again soon", "controller", c.opts.Name, "key", d.Key, "err", err)
		c.acknowledge(ctx, d, retryAfter(d, claimRetry))
		return nil, nil, false
	}
	claim, drop := c.claims.hold(ctx, ls)
	return claim, func() { c.settling.do(func() { drop(ctx) }) }, true
}

// cacheRetries is how many deliveries of a key wait for caches behind its
// triggering revisions before it is reconciled anyway (about a minute,
// CacheWait each): a bucket made again restarts its revisions, and a key
// queued before then would wait forever.
const cacheRetries = 12

// cachesReady waits for the caches to reach the revisions that triggered
// the delivery. A reconcile from a cache that has not seen the change would
// act on the old state and ack the key, and nothing would bring the change
// back until the resync; so a key whose caches stay behind (an informer
// resuming after a bus node died) is handed back to try again.
func (c *Controller) cachesReady(ctx context.Context, d *bus.Delivery) bool {
	for r, rev := range d.MinRevisions {
		inf := c.mgr.informerOf(r)
		if inf == nil || inf.WaitForRevision(ctx, rev, c.opts.CacheWait) {
			continue
		}
		cacheBehind.WithLabelValues(c.opts.Name).Inc()
		if d.Attempt >= cacheRetries {
			c.log.Warn("cache still behind the triggering revision; reconciling anyway", "controller", c.opts.Name,
				"key", d.Key, "resource", r, "revision", rev, "attempt", d.Attempt)
			return true
		}
		c.log.Info("cache behind the triggering revision; trying the key again", "controller", c.opts.Name,
			"key", d.Key, "resource", r, "revision", rev)
		c.acknowledge(ctx, d, retryAfter(d, 0))
		return false
	}
	return true
}

// keepAlive extends the claim while a long reconcile runs.
func (c *Controller) keepAlive(ctx context.Context, d *bus.Delivery) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for clock.Sleep(ctx, c.opts.AckWait/3) {
			_ = d.InProgress()
		}
	}()
	return func() { cancel(); <-done }
}

// call runs the reconciler, turning a panic into an error.
func (c *Controller) call(ctx context.Context, req Request) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reconcile panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return c.opts.Reconciler.Reconcile(ctx, req)
}

func (c *Controller) settle(ctx context.Context, d *bus.Delivery, res Result, err error, traceID string, rev uint64) string {
	resource := c.opts.For.Resource
	if resource == "" {
		resource = "-"
	}
	switch {
	case err == nil && res.RequeueAfter > 0:
		c.clearRecord(ctx, resource, d.Key)
		c.acknowledge(ctx, d, retryAfter(d, res.RequeueAfter))
		return "requeue"
	case err == nil:
		c.clearRecord(ctx, resource, d.Key)
		c.acknowledge(ctx, d, d.Ack)
		return "success"
	}
	reconcileErrors.WithLabelValues(c.opts.Name).Inc()
	rec := RetryRecord{Controller: c.opts.Name, Kind: c.opts.For.Kind, Key: d.Key, Attempts: d.Attempt,
		LastError: err.Error(), LastAttempt: time.Now().UTC(), TraceID: traceID, Revision: rev}
	result := "error"
	if IsTerminal(err) {
		rec.Terminal = true
		result = "terminal"
		c.acknowledge(ctx, d, d.Ack)
		c.log.Warn("reconcile failed for good; waiting for the object to change", "controller", c.opts.Name, "key", d.Key, "err", err)
	} else {
		delay := c.opts.Backoff.Delay(d.Attempt)
		if errors.Is(err, bus.ErrUnavailable) {
			// Not this object's fault, and over soon: retry at a steady
			// pace instead of a backoff that grows while the bus elects.
			delay = min(delay, unavailableRetry)
		}
		next := rec.LastAttempt.Add(delay)
		rec.NextRetry = &next
		queueRetries.WithLabelValues(c.opts.Name).Inc()
		c.acknowledge(ctx, d, retryAfter(d, delay))
		c.log.Debug("reconcile failed; backing off", "controller", c.opts.Name, "key", d.Key, "attempt", d.Attempt, "delay", delay, "err", err)
	}
	if werr := c.mgr.retries.record(ctx, rec, resource); werr != nil {
		c.log.Warn("recording retry state", "controller", c.opts.Name, "key", d.Key, "err", werr)
	}
	return result
}

func (c *Controller) clearRecord(ctx context.Context, resource, key string) {
	if err := c.mgr.retries.clear(ctx, resource, key, c.opts.Name); err != nil {
		c.log.Warn("clearing retry state", "controller", c.opts.Name, "key", key, "err", err)
	}
}

// unavailableRetry caps the delay before retrying a reconcile that failed
// because the bus was unavailable.
const unavailableRetry = 500 * time.Millisecond

// check logs a failed ack: the key will simply come back after AckWait.
func (c *Controller) check(err error, d *bus.Delivery) {
	if err != nil {
		c.log.Debug("ack failed; the key will be redelivered", "controller", c.opts.Name, "key", d.Key, "err", err)
	}
}
