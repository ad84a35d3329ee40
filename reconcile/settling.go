package reconcile

import (
	"context"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
)

// settling runs what is left of a delivery once its pass is over (the
// queue's confirmation of its acknowledgement, the release of its claim)
// apart from the worker, which goes on to its next delivery. Each is a
// round trip to the bus, and under load a round trip took 5–6 ms: a
// Deployment's handling was 36 ms, of which the acknowledgement and the
// release were 11, and with eight workers the Deployments' queue was what
// paced a thousand small Deployments. Nothing waits on either: a key
// delivered again before its acknowledgement is confirmed is a new
// message (the queue keeps one a key), and a claim given up late only
// makes another process wait for it, as a claim still held does; an old
// release or renewal is a compare-and-swap on the old claim's revision,
// so it cannot undo the next claim of the key. At most limit run at
// once, so that a bus that does not answer holds the workers back rather
// than piling up retries; wait waits for those under way. They run under
// the workers' context: one still queued when a drain runs out fails at
// once, and its key waits out AckWait (its claim, claimTTL), as a pass
// cut off by the drain does.
type settling struct {
	slots chan struct{}
	wg    sync.WaitGroup
}

func newSettling(limit int) *settling {
	return &settling{slots: make(chan struct{}, max(limit, 1))}
}

// do runs f apart, once one of the slots is free.
func (s *settling) do(f func()) {
	s.slots <- struct{}{}
	s.wg.Go(func() {
		defer func() { <-s.slots }()
		f()
	})
}

// wait returns once every f under way has returned.
func (s *settling) wait() { s.wg.Wait() }

// acknowledge sends d's acknowledgement (an ack or a retry) and has the
// queue confirm it apart from the worker (settling). ctx may carry the
// pass's span, ended by the time this runs: the confirmation starts no
// span of its own.
func (c *Controller) acknowledge(ctx context.Context, d *bus.Delivery, send func(context.Context) error) {
	c.settling.do(func() { c.check(send(ctx), d) })
}

// retryAfter hands d back to be delivered again after delay.
func retryAfter(d *bus.Delivery, delay time.Duration) func(context.Context) error {
	return func(ctx context.Context) error { return d.Retry(ctx, delay) }
}
