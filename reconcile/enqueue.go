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
type enqueuer struct {
	q     *bus.Queue
	every time.Duration
	log   *slog.Logger
	name  string

	mu      sync.Mutex
	pending map[string]*pendingKey
	kick    chan struct{}
}

type pendingKey struct {
	revs  map[string]uint64
	trace trace.SpanContext
}

func newEnqueuer(q *bus.Queue, every time.Duration, name string, log *slog.Logger) *enqueuer {
	return &enqueuer{q: q, every: every, name: name, log: log, pending: map[string]*pendingKey{}, kick: make(chan struct{}, 1)}
}

// add schedules key; resource and rev (when set) must be in the worker's
// cache first.
func (e *enqueuer) add(key, resource string, rev uint64, sc trace.SpanContext) {
	e.mu.Lock()
	p := e.pending[key]
	if p == nil {
		p = &pendingKey{revs: map[string]uint64{}, trace: sc}
		e.pending[key] = p
	}
	if resource != "" && rev > p.revs[resource] {
		p.revs[resource] = rev
	}
	n := len(e.pending)
	e.mu.Unlock()
	if n == 1 {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

func (e *enqueuer) run(ctx context.Context) {
	retry := clock.Pace{First: e.every, Max: unavailableRetry}
	for {
		select {
		case <-ctx.Done():
			e.flush(context.WithoutCancel(ctx))
			return
		case <-e.kick:
		}
		// Wait a moment so that a burst folds into one write per key.
		if !clock.Sleep(ctx, e.every) {
			e.flush(context.WithoutCancel(ctx))
			return
		}
		if e.flush(ctx) {
			retry.Reset()
			continue
		}
		if !retry.Wait(ctx) {
			e.flush(context.WithoutCancel(ctx))
			return
		}
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// flush writes what is pending and reports whether the queue took it;
// what it did not take stays pending.
func (e *enqueuer) flush(ctx context.Context) bool {
	e.mu.Lock()
	batch := e.pending
	e.pending = map[string]*pendingKey{}
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
