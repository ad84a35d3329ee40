package scheduler

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// queue holds the pods waiting to be scheduled: active ones in FIFO order,
// and unschedulable ones parked with a backoff (1s doubling to 60s) until
// their time comes, the pod changes, or the cluster changes (a node, a
// freed pod) in a way that may let them fit.
type queue struct {
	mu       sync.Mutex
	active   []string
	inActive map[string]bool
	parked   map[string]time.Time
	attempts map[string]int
	traces   map[string]trace.SpanContext
	wake     chan struct{}
	// most is the most pods held since the queue was last empty: a map
	// keeps the room it grew to, and a queue that held 100,000 pods of a
	// burst held 10 MB of empty maps once they were bound.
	most int
}

// drainedRoom is how many pods a queue must have held to be made anew
// once empty.
const drainedRoom = 1024

func newQueue() *queue {
	q := &queue{wake: make(chan struct{}, 1)}
	q.empty()
	return q
}

// empty makes the queue's maps anew; q.mu is held, or q is new.
func (q *queue) empty() {
	q.active, q.inActive, q.parked, q.attempts, q.traces = nil, map[string]bool{}, map[string]time.Time{}, map[string]int{}, map[string]trace.SpanContext{}
	q.most = 0
}

// renewIfDrained makes the queue anew when it is empty after holding
// many pods; q.mu is held.
func (q *queue) renewIfDrained() {
	q.most = max(q.most, len(q.inActive), len(q.traces), len(q.parked))
	if q.most >= drainedRoom && len(q.active) == 0 && len(q.inActive) == 0 && len(q.parked) == 0 && len(q.attempts) == 0 && len(q.traces) == 0 {
		q.empty()
	}
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) activate(key string) {
	delete(q.parked, key)
	if !q.inActive[key] {
		q.inActive[key] = true
		q.active = append(q.active, key)
		q.signal()
	}
}

// add makes a new or changed unbound pod active.
func (q *queue) add(key string, sc trace.SpanContext) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if sc.IsValid() {
		q.traces[key] = sc
	}
	q.activate(key)
}

// remove forgets a pod that is bound or gone.
func (q *queue) remove(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.parked, key)
	delete(q.attempts, key)
	delete(q.traces, key)
	// Left in active, it is skipped when popped.
	q.renewIfDrained()
}

// park backs off an unschedulable pod.
func (q *queue) park(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.attempts[key]++
	d := time.Second << min(q.attempts[key]-1, 6)
	q.parked[key] = time.Now().Add(min(d, time.Minute))
}

// flushParked retries every parked pod now: the cluster changed.
func (q *queue) flushParked() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k := range q.parked {
		q.activate(k)
	}
}

// pop returns the next pod to try, waiting until one is due or ctx ends.
func (q *queue) pop(ctx context.Context) (string, trace.SpanContext, bool) {
	for {
		q.mu.Lock()
		now := time.Now()
		next := time.Minute
		for k, until := range q.parked {
			if !until.After(now) {
				q.activate(k)
			} else if d := until.Sub(now); d < next {
				next = d
			}
		}
		if len(q.active) > 0 {
			k := q.active[0]
			q.active = q.active[1:]
			delete(q.inActive, k)
			hdr := q.traces[k]
			q.renewIfDrained()
			q.mu.Unlock()
			return k, hdr, true
		}
		q.mu.Unlock()
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", trace.SpanContext{}, false
		case <-q.wake:
			t.Stop()
		case <-t.C:
		}
	}
}
