package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
)

// enqueuer coalesces additions to a queue in the process for a short
// while, so that ten thousand pod changes of one ReplicaSet make a handful
// of queue writes, not ten thousand. Each flushed key carries the highest
// revision per resource that triggered it and the trace context of the
// first trigger. When the bus refuses the writes, it keeps them and tries
// again with a growing pause.
//
// A key whose last pass took long waits longer (foldFor): a ReplicaSet of
// ten thousand pods reads them all on every pass, and while they start,
// each pass was followed by the next as soon as the fold allowed.
type enqueuer struct {
	q     *bus.Queue
	every time.Duration
	log   *slog.Logger
	name  string

	mu      sync.Mutex
	pending map[string]*pendingKey
	// wake is when the earliest pending key is due (zero: none pending).
	wake time.Time
	// costs holds the last pass of the keys whose passes take long.
	costs map[string]time.Duration
	kick  chan struct{}
}

type pendingKey struct {
	revs  map[string]uint64
	trace trace.SpanContext
	due   time.Time
}

// Pacing by a key's cost: the fold before its next pass is passCostFactor
// times its last pass, at most maxFold.
const (
	passCostFactor = 4
	maxFold        = 250 * time.Millisecond
	// maxCosts bounds the keys whose costs are kept.
	maxCosts = 10000
)

// foldFor is how long an addition of a key waits for others to fold into
// it, given its last pass: every, or longer for a key whose passes take
// long, so that one key takes at most a fifth of a worker's time.
func foldFor(every, lastPass time.Duration) time.Duration {
	return max(every, min(passCostFactor*lastPass, maxFold))
}

func newEnqueuer(q *bus.Queue, every time.Duration, name string, log *slog.Logger) *enqueuer {
	return &enqueuer{q: q, every: every, name: name, log: log, pending: map[string]*pendingKey{},
		costs: map[string]time.Duration{}, kick: make(chan struct{}, 1)}
}

// add schedules key; resource and rev (when set) must be in the worker's
// cache first.
func (e *enqueuer) add(key, resource string, rev uint64, sc trace.SpanContext) {
	e.mu.Lock()
	p := e.pending[key]
	sooner := false
	if p == nil {
		due := time.Now().Add(foldFor(e.every, e.costs[key]))
		p = &pendingKey{revs: map[string]uint64{}, trace: sc, due: due}
		e.pending[key] = p
		if e.wake.IsZero() || due.Before(e.wake) {
			e.wake, sooner = due, true
		}
	}
	if resource != "" && rev > p.revs[resource] {
		p.revs[resource] = rev
	}
	e.mu.Unlock()
	if sooner {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// passed records how long a pass of key took.
func (e *enqueuer) passed(key string, took time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if foldFor(e.every, took) == e.every {
		delete(e.costs, key)
		return
	}
	if len(e.costs) >= maxCosts {
		// Keys of objects long gone are never cheap again: start over
		// rather than keep them.
		clear(e.costs)
	}
	e.costs[key] = took
}

func (e *enqueuer) run(ctx context.Context) {
	retry := clock.Pace{First: e.every, Max: unavailableRetry}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			e.flush(context.WithoutCancel(ctx), time.Time{})
			return
		case <-e.kick:
		case <-timer.C:
		}
		e.mu.Lock()
		wake := e.wake
		e.mu.Unlock()
		if wait := time.Until(wake); wake.IsZero() || wait > 0 {
			if !wake.IsZero() {
				timer.Reset(wait)
			}
			continue
		}
		// Keys due within half a fold go too, so that a burst is one
		// write of many keys.
		if e.flush(ctx, time.Now().Add(e.every/2)) {
			retry.Reset()
		} else if !retry.Wait(ctx) {
			e.flush(context.WithoutCancel(ctx), time.Time{})
			return
		}
		e.mu.Lock()
		wake = e.wake
		e.mu.Unlock()
		if !wake.IsZero() {
			timer.Reset(max(time.Until(wake), 0))
		}
	}
}

// flush writes the pending keys due by until (zero: every one) and
// reports whether the queue took them; what it did not take stays
// pending.
func (e *enqueuer) flush(ctx context.Context, until time.Time) bool {
	e.mu.Lock()
	batch := map[string]*pendingKey{}
	e.wake = time.Time{}
	for key, p := range e.pending {
		if until.IsZero() || !p.due.After(until) {
			batch[key] = p
			delete(e.pending, key)
		} else if e.wake.IsZero() || p.due.Before(e.wake) {
			e.wake = p.due
		}
	}
	e.mu.Unlock()
	if len(batch) == 0 {
		return true
	}
	work := make([]bus.Work, 0, len(batch))
	for key, p := range batch {
		work = append(work, bus.Work{Key: key, MinRevisions: p.revs, Trace: p.trace})
	}
	if err := e.q.Add(ctx, work...); err != nil {
		e.log.Warn("enqueue failed; trying again", "controller", e.name, "keys", len(work), "err", err)
		for key, p := range batch {
			for r, rev := range p.revs {
				e.add(key, r, rev, p.trace)
			}
			if len(p.revs) == 0 {
				e.add(key, "", 0, p.trace)
			}
		}
		return false
	}
	queueAdds.WithLabelValues(e.name).Add(float64(len(work)))
	return true
}
