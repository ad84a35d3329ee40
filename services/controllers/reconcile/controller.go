package reconcile

import (
	"context"
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
	"github.com/homeostat/homeostat/tracing"
)

// Options configure a controller.
type Options struct {
	// Name identifies the controller: its queue, metrics and retry records.
	Name string
	// For is the kind whose keys the controller reconciles. Every write of
	// it is enqueued server-side unless NoSource is set. A controller over
	// several kinds sets NoSource, leaves For empty, and gets the raw key
	// of whatever it enqueued.
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
}

// Controller is a running controller: a queue and its workers.
type Controller struct {
	opts  Options
	mgr   *Manager
	queue *bus.Queue
	enq   *enqueuer
	log   *slog.Logger
	keys  keyLocks
}

// keyLocks keeps two workers of one process off the same key, as
// client-go's workqueue does: the second waits, then works from a fresher
// cache. (Across processes it can still happen; reconcilers are safe
// against it.)
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

// Enqueue schedules key for reconciliation; after bucket has reached rev
// in this process's caches (bucket "" for none), in the trace of change.
func (c *Controller) Enqueue(key string, change *Change, bucket string) {
	if change == nil {
		c.enq.add(key, "", 0, nil)
		return
	}
	c.enq.add(key, bucket, change.Revision, change.Header)
}

// EnqueueKey schedules key with no revision to wait for.
func (c *Controller) EnqueueKey(key string) { c.enq.add(key, "", 0, nil) }

func (c *Controller) run(ctx context.Context, workCtx context.Context) error {
	errs := make(chan error, 3)
	go func() { c.enq.run(ctx); errs <- nil }()
	go func() { c.resync(ctx); errs <- nil }()
	go func() { c.watchDepth(ctx); errs <- nil }()
	err := c.queue.Consume(ctx, c.opts.Workers, func(d *bus.Delivery) { c.handle(workCtx, d) })
	for range 3 {
		<-errs
	}
	return err
}

// resync enqueues every key every Resync period (±10%), the safety net for
// anything missed. Not at start: the queue is durable, and re-enqueueing a
// key would restart its backoff.
func (c *Controller) resync(ctx context.Context) {
	if c.opts.Resync < 0 || c.opts.For.Bucket == "" {
		return
	}
	inf := c.mgr.Informer(c.opts.For)
	for {
		jitter := time.Duration(float64(c.opts.Resync) * (0.9 + 0.2*rand.Float64()))
		if !sleep(ctx, jitter) {
			return
		}
		for _, k := range inf.Keys() {
			c.enq.add(k, "", 0, nil)
		}
	}
}

func (c *Controller) watchDepth(ctx context.Context) {
	for sleep(ctx, 2*time.Second) {
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
	if d.Attempt == 1 && len(d.Header.Values(bus.HeaderMinRevision)) == 0 {
		queueAdds.WithLabelValues(c.opts.Name).Inc()
	}
	for b, rev := range d.MinRevisions {
		if inf := c.mgr.informerOf(b); inf != nil && !inf.WaitForRevision(ctx, rev, c.opts.CacheWait) {
			c.log.Debug("cache did not reach the triggering revision in time", "controller", c.opts.Name, "bucket", b, "revision", rev)
		}
	}
	req := RequestFor(c.opts.For, d.Key)
	rev := d.MinRevisions[c.opts.For.Bucket]
	sctx, span := tracing.Tracer().Start(d.Context(ctx), "reconcile "+c.opts.Name,
		trace.WithAttributes(
			attribute.String("controller", c.opts.Name), attribute.String("kind", c.opts.For.Kind),
			attribute.String("key", d.Key), attribute.Int64("revision", int64(rev)), attribute.Int64("attempt", int64(d.Attempt)),
		))
	stop := c.keepAlive(sctx, d)
	start := time.Now()
	res, err := c.call(sctx, req)
	stop()
	elapsed := time.Since(start)
	result := c.settle(sctx, d, res, err, span.SpanContext().TraceID().String(), rev)
	span.SetAttributes(attribute.String("result", result))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	reconcileDuration.WithLabelValues(c.opts.Name, result).Observe(elapsed.Seconds())
}

// keepAlive extends the claim while a long reconcile runs.
func (c *Controller) keepAlive(ctx context.Context, d *bus.Delivery) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sleep(ctx, c.opts.AckWait/3) {
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
	bucket := c.opts.For.Bucket
	if bucket == "" {
		bucket = "-"
	}
	switch {
	case err == nil && res.RequeueAfter > 0:
		c.clearRecord(ctx, bucket, d.Key)
		c.check(d.Retry(res.RequeueAfter), d)
		return "requeue"
	case err == nil:
		c.clearRecord(ctx, bucket, d.Key)
		c.check(d.Ack(), d)
		return "success"
	}
	reconcileErrors.WithLabelValues(c.opts.Name).Inc()
	rec := RetryRecord{Controller: c.opts.Name, Kind: c.opts.For.Kind, Key: d.Key, Attempts: d.Attempt,
		LastError: err.Error(), LastAttempt: time.Now().UTC(), TraceID: traceID, Revision: rev}
	result := "error"
	if IsTerminal(err) {
		rec.Terminal = true
		result = "terminal"
		c.check(d.Ack(), d)
		c.log.Warn("reconcile failed for good; waiting for the object to change", "controller", c.opts.Name, "key", d.Key, "err", err)
	} else {
		delay := c.opts.Backoff.Delay(d.Attempt)
		next := rec.LastAttempt.Add(delay)
		rec.NextRetry = &next
		queueRetries.WithLabelValues(c.opts.Name).Inc()
		c.check(d.Retry(delay), d)
		c.log.Debug("reconcile failed; backing off", "controller", c.opts.Name, "key", d.Key, "attempt", d.Attempt, "delay", delay, "err", err)
	}
	if werr := c.mgr.retries.record(ctx, rec, bucket); werr != nil {
		c.log.Warn("recording retry state", "controller", c.opts.Name, "key", d.Key, "err", werr)
	}
	return result
}

func (c *Controller) clearRecord(ctx context.Context, bucket, key string) {
	if err := c.mgr.retries.clear(ctx, bucket, key, c.opts.Name); err != nil {
		c.log.Warn("clearing retry state", "controller", c.opts.Name, "key", key, "err", err)
	}
}

// check logs a failed ack: the key will simply come back after AckWait.
func (c *Controller) check(err error, d *bus.Delivery) {
	if err != nil {
		c.log.Debug("ack failed; the key will be redelivered", "controller", c.opts.Name, "key", d.Key, "err", err)
	}
}
