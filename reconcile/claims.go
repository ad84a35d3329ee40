package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
)

// Claims keep a key of an Exclusive controller in one process at a time.
//
// The work queue hands a key to one worker, but a write of the object
// replaces the message in flight and the new one may go to another
// process while the first still works: two reconciles of one key at once,
// from views of different ages. Most reconcilers are safe against it (their
// writes are compare-and-swap on the objects they decide on); a decision
// over several objects is not (a Deployment growing one ReplicaSet on the
// count of the others: two reconciles can each grow a different one within
// the bound and together pass it). So an Exclusive controller takes a lease
// on the key, named for its process, before it reconciles, and gives it up
// after; a worker elsewhere that finds it taken waits for it.
//
// The lease expires claimTTL after its last renewal, so a claim of a dead
// process stalls its key for at most that long (a restarted process with a
// stable identity takes its own claims back at once). A reconcile whose
// claim goes unrenewed for claimCutoff is cancelled: its writes stop well
// before another process can take the key.
const (
	claimTTL     = 5 * time.Second
	claimRenew   = time.Second
	claimCutoff  = 2 * time.Second
	claimWait    = time.Second
	claimRetry   = 200 * time.Millisecond
	claimKeyRoot = "claim."
)

// claimer takes and keeps claims for one process.
type claimer struct {
	leases *bus.Leases
	holder string
}

// ClaimKey is the lease key of a controller's claim on key.
func ClaimKey(controller, key string) string { return claimKeyRoot + controller + "." + key }

// take claims key for controller, waiting up to claimWait for another
// holder to let it go. ErrAlreadyExists when it is still held, even when
// the wait runs out in the middle of a read.
func (c *claimer) take(ctx context.Context, controller, key string) (*bus.Lease, error) {
	wait, cancel := context.WithTimeout(ctx, claimWait)
	defer cancel()
	pace := clock.Pace{First: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	var held error
	for {
		ls, err := c.leases.Acquire(wait, ClaimKey(controller, key), c.holder, claimTTL)
		switch {
		case err == nil:
			return ls, nil
		case errors.Is(err, bus.ErrAlreadyExists):
			held = err
		case held != nil && wait.Err() != nil && ctx.Err() == nil:
			return nil, held
		default:
			return nil, err
		}
		if !pace.Wait(wait) {
			return nil, held
		}
	}
}

// hold renews a claim while work runs under the returned context, which
// ends when the claim cannot be renewed for claimCutoff. release stops
// renewing and gives the claim up.
func (c *claimer) hold(ctx context.Context, ls *bus.Lease) (work context.Context, release func(context.Context)) {
	work, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	cur := make(chan *bus.Lease, 1)
	go func() {
		defer close(done)
		last, renewed := ls, time.Now()
		for clock.Sleep(work, claimRenew) {
			rctx, rcancel := context.WithTimeout(work, claimRenew)
			next, err := c.leases.Renew(rctx, last, claimTTL)
			rcancel()
			switch {
			case err == nil:
				last, renewed = next, time.Now()
			case errors.Is(err, bus.ErrConflict):
				cancel(fmt.Errorf("%w: claim on %s lost", bus.ErrUnavailable, ls.Key))
			case time.Since(renewed) >= claimCutoff:
				cancel(fmt.Errorf("%w: claim on %s not renewed for %s: %v", bus.ErrUnavailable, ls.Key, claimCutoff, err))
			}
		}
		cur <- last
	}()
	return work, func(rctx context.Context) {
		cancel(nil)
		<-done
		_ = c.leases.Release(rctx, <-cur)
	}
}
