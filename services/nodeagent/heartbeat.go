package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
)

// Heartbeats keeps a node's heartbeat lease. A real node's agent keeps it
// through the node relay (bus.NodeWriter): the leases' bucket allows
// rollups, so its credentials hold no subject of it. A host of simulated
// nodes, trusted with the leases, keeps them directly (bus.Leases).
type Heartbeats interface {
	// Acquire takes the lease at key for holder: bus.ErrAlreadyExists
	// while another holder's is live.
	Acquire(ctx context.Context, key, holder string, ttl time.Duration) (*bus.Lease, error)
	// Renew extends lease: bus.ErrConflict when it was written since.
	Renew(ctx context.Context, lease *bus.Lease, ttl time.Duration) (*bus.Lease, error)
}

// ErrNodeTaken: another live agent holds the node name.
var ErrNodeTaken = errors.New("node name taken")

func (a *Agent) leaseKey() string { return bus.NodeLeaseKey(a.cfg.NodeName) }

// heartbeat renews the node's lease every HeartbeatEvery until ctx ends,
// wg counting it until a renewal under way then has returned. Should
// another agent take the node name (ours lapsed while we were cut off),
// this agent stops rather than run pods alongside it. Between renewals it
// holds a timer, not a goroutine: a host of 5,000 simulated nodes held as
// many goroutines waiting on tickers, with stacks grown by the renewals.
func (a *Agent) heartbeat(ctx context.Context, wg *sync.WaitGroup, b *beater) {
	b.lastStatus = time.Now() // register wrote it
	// One count in wg, held by the timer while it waits and by the
	// renewal while it runs; the mutex orders a renewal's end against
	// the stop, so that exactly one of them lets it go, and the timer's
	// first run after t is set.
	var mu sync.Mutex
	stopped, first := false, true
	wg.Add(1)
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	// The first run shows the Lease at once, as the pods are watched.
	t = time.AfterFunc(0, func() {
		start := time.Now()
		more := ctx.Err() == nil
		switch {
		case more && first:
			first = false
			a.showHeartbeat(ctx, &b.lastStatus)
		case more:
			more = b.beat(ctx)
		}
		mu.Lock()
		defer mu.Unlock()
		if !more || stopped {
			wg.Done()
			return
		}
		// As a ticker would: the next renewal is due a period after this
		// one began, at once if this one took longer.
		t.Reset(max(a.cfg.HeartbeatEvery-time.Since(start), 0))
	})
	context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if t.Stop() {
			wg.Done()
		}
	})
}

// beater is what the heartbeat keeps between renewals.
type beater struct {
	a          *Agent
	leases     Heartbeats
	lease      *bus.Lease
	stop       context.CancelCauseFunc
	lastStatus time.Time
}

// beat renews the lease once: false when another agent has taken the
// node, and this one stops.
func (b *beater) beat(ctx context.Context) bool {
	a := b.a
	next, err := b.leases.Renew(ctx, b.lease, a.cfg.Grace)
	if errors.Is(err, bus.ErrConflict) {
		next, err = b.leases.Acquire(ctx, a.leaseKey(), a.cfg.Identity, a.cfg.Grace)
		if errors.Is(err, bus.ErrAlreadyExists) {
			a.log.Error("another agent took this node; stopping", "err", err)
			b.stop(fmt.Errorf("nodeagent: node %s: %w (%v)", a.cfg.NodeName, ErrNodeTaken, err))
			return false
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("heartbeat failed", "err", err)
		}
		return true
	}
	b.lease = next
	a.showHeartbeat(ctx, &b.lastStatus)
	return true
}

// showHeartbeat renews the node's Lease object and, each StatusEvery, the
// Node's status with its heartbeat time: what kubectl describe node shows.
// Neither is what the control plane acts on, so a failure is only logged.
func (a *Agent) showHeartbeat(ctx context.Context, lastStatus *time.Time) {
	if time.Since(*lastStatus) >= a.cfg.StatusEvery {
		if err := a.register(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("refreshing the node's status", "err", err)
		} else {
			*lastStatus = time.Now()
		}
	}
	if err := a.leaseObject.renew(ctx, a.nodeUID, a.cfg.Grace); err != nil && ctx.Err() == nil {
		a.log.Warn("renewing the node's Lease", "err", err)
	}
}

func (a *Agent) heartbeats(ctx context.Context) (Heartbeats, error) {
	if a.cfg.Heartbeats != nil {
		return a.cfg.Heartbeats, nil
	}
	if h, ok := a.write.(Heartbeats); ok {
		return h, nil
	}
	return a.cfg.Bus.Leases(ctx)
}
