package reconcile

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
)

// Backoff shapes the delay before a failed key is retried: Initial,
// doubling (by Multiplier) up to Max, like client-go's default rate limiter.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	// Jitter randomises each delay by ±Jitter (0.1 = 10%); 0 is exact.
	Jitter float64
}

// DefaultBackoff: 5ms doubling to 5 minutes.
var DefaultBackoff = Backoff{Initial: 5 * time.Millisecond, Max: 5 * time.Minute, Multiplier: 2}

// Delay is the wait after the attempt-th failure (attempt counts from 1).
// It is computed from the delivery count alone, so workers hold no state.
func (b Backoff) Delay(attempt uint64) time.Duration {
	eb := &backoff.ExponentialBackOff{
		InitialInterval:     b.Initial,
		RandomizationFactor: b.Jitter,
		Multiplier:          b.Multiplier,
		MaxInterval:         b.Max,
		MaxElapsedTime:      0,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	eb.Reset()
	d := eb.NextBackOff()
	for i := uint64(1); i < attempt && d < b.Max; i++ {
		d = eb.NextBackOff()
	}
	return min(d, b.Max)
}

// RetryRecord is the visible retry state of one object in one controller.
// It lives in its own bucket: writing it to the object would re-enqueue the
// key at once and defeat the backoff.
type RetryRecord struct {
	Controller  string     `json:"controller"`
	Kind        string     `json:"kind"`
	Key         string     `json:"key"`
	Attempts    uint64     `json:"attempts"`
	LastError   string     `json:"lastError"`
	LastAttempt time.Time  `json:"lastAttempt"`
	NextRetry   *time.Time `json:"nextRetry,omitempty"`
	Terminal    bool       `json:"terminal,omitempty"`
	TraceID     string     `json:"traceID,omitempty"`
	Revision    uint64     `json:"revision,omitempty"`
}

// retries writes records and remembers which exist (from a watch of the
// records), so that a success clears a record only where one exists.
type retries struct {
	recs *bus.RetryRecords
	log  *slog.Logger

	mu    sync.RWMutex
	known map[string]bool
}

func newRetries(ctx context.Context, conn *bus.Conn, log *slog.Logger) (*retries, error) {
	recs, err := conn.RetryRecords(ctx)
	if err != nil {
		return nil, err
	}
	return &retries{recs: recs, log: log, known: map[string]bool{}}, nil
}

func (r *retries) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := r.recs.Watch(ctx, func(key string, exists bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if exists {
				r.known[key] = true
			} else {
				delete(r.known, key)
			}
		})
		if err != nil && ctx.Err() == nil {
			r.log.Warn("watching retry records; retrying", "err", err)
			clock.Sleep(ctx, time.Second)
		}
	}
}

func (r *retries) record(ctx context.Context, rec RetryRecord, resource string) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	k := bus.RetryKey(resource, rec.Key, rec.Controller)
	if err := r.recs.Put(ctx, k, b); err != nil {
		return err
	}
	r.mu.Lock()
	r.known[k] = true
	r.mu.Unlock()
	return nil
}

func (r *retries) clear(ctx context.Context, resource, key, controller string) error {
	k := bus.RetryKey(resource, key, controller)
	r.mu.RLock()
	known := r.known[k]
	r.mu.RUnlock()
	if !known {
		return nil
	}
	if err := r.recs.Delete(ctx, k); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.known, k)
	r.mu.Unlock()
	return nil
}
