package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/bus"
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

// RetryBucket holds retry records, keyed <bucket>.<object key>.<controller>.
const RetryBucket = bus.RetryBucket

// RetryKey is the record key of an object in a controller.
func RetryKey(bucket, key, controller string) string { return bus.RetryKey(bucket, key, controller) }

// retries writes records and remembers which exist (from a watch of the
// bucket), so that a success clears a record only where one exists.
type retries struct {
	kv jetstream.KeyValue

	mu    sync.RWMutex
	known map[string]bool
}

func newRetries(ctx context.Context, conn *bus.Conn) (*retries, error) {
	kv, err := conn.EnsureBucket(ctx, bus.BucketSpec{Name: RetryBucket, TTL: 24 * time.Hour, Description: "homeostat retry state"})
	if err != nil {
		return nil, err
	}
	return &retries{kv: kv, known: map[string]bool{}}, nil
}

func (r *retries) run(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := r.kv.WatchAll(ctx, jetstream.MetaOnly())
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for e := range w.Updates() {
			if e == nil {
				continue
			}
			r.mu.Lock()
			r.known[e.Key()] = e.Operation() == jetstream.KeyValuePut
			if !r.known[e.Key()] {
				delete(r.known, e.Key())
			}
			r.mu.Unlock()
		}
		_ = w.Stop()
	}
}

func (r *retries) record(ctx context.Context, rec RetryRecord, bucket string) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	k := RetryKey(bucket, rec.Key, rec.Controller)
	if _, err := r.kv.Put(ctx, k, b); err != nil {
		return err
	}
	r.mu.Lock()
	r.known[k] = true
	r.mu.Unlock()
	return nil
}

func (r *retries) clear(ctx context.Context, bucket, key, controller string) error {
	k := RetryKey(bucket, key, controller)
	r.mu.RLock()
	known := r.known[k]
	r.mu.RUnlock()
	if !known {
		return nil
	}
	err := r.kv.Delete(ctx, k)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	r.mu.Lock()
	delete(r.known, k)
	r.mu.Unlock()
	return nil
}
