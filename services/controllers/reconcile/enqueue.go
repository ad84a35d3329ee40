package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/homeostat/homeostat/bus"
)

// enqueuer coalesces direct enqueues in the process for a short while, so
// that ten thousand pod changes of one ReplicaSet make a handful of queue
// writes, not ten thousand. Each flushed key carries the highest revision
// per bucket that triggered it and the trace context of the first trigger.
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
	revs   map[string]uint64
	header nats.Header
}

func newEnqueuer(q *bus.Queue, every time.Duration, name string, log *slog.Logger) *enqueuer {
	return &enqueuer{q: q, every: every, name: name, log: log, pending: map[string]*pendingKey{}, kick: make(chan struct{}, 1)}
}

// add schedules key; bucket and rev (when set) must be in the worker's cache first.
func (e *enqueuer) add(key, bucket string, rev uint64, header nats.Header) {
	e.mu.Lock()
	p := e.pending[key]
	if p == nil {
		p = &pendingKey{revs: map[string]uint64{}, header: header}
		e.pending[key] = p
	}
	if bucket != "" && rev > p.revs[bucket] {
		p.revs[bucket] = rev
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
	for {
		select {
		case <-ctx.Done():
			e.flush(context.WithoutCancel(ctx))
			return
		case <-e.kick:
		}
		// Wait a moment so that a burst folds into one write per key.
		if !sleep(ctx, e.every) {
			e.flush(context.WithoutCancel(ctx))
			return
		}
		e.flush(ctx)
	}
}

func (e *enqueuer) flush(ctx context.Context) {
	e.mu.Lock()
	batch := e.pending
	e.pending = map[string]*pendingKey{}
	e.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	msgs := make([]*nats.Msg, 0, len(batch))
	for key, p := range batch {
		tctx := ctx
		if len(p.header) > 0 {
			tctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(p.header))
		}
		msgs = append(msgs, e.q.EnqueueMsg(tctx, key, p.revs))
	}
	if err := e.q.Enqueue(ctx, msgs...); err != nil {
		e.log.Warn("enqueue failed; trying again", "controller", e.name, "keys", len(msgs), "err", err)
		for key, p := range batch {
			for b, r := range p.revs {
				e.add(key, b, r, p.header)
			}
			if len(p.revs) == 0 {
				e.add(key, "", 0, p.header)
			}
		}
		return
	}
	queueAdds.WithLabelValues(e.name).Add(float64(len(msgs)))
}
