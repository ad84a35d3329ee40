package nodeagent

import (
	"context"
	"errors"
	"fmt"
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

// heartbeat renews the node's lease. Should another agent take the node
// name (ours lapsed while we were cut off), this agent stops rather than
// run pods alongside it.
func (a *Agent) heartbeat(ctx context.Context, leases Heartbeats, lease *bus.Lease, stop context.CancelCauseFunc) {
	t := time.NewTicker(a.cfg.HeartbeatEvery)
	defer t.Stop()
	lastStatus := time.Now() // register wrote it
	a.showHeartbeat(ctx, &lastStatus)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, err := leases.Renew(ctx, lease, a.cfg.Grace)
		if errors.Is(err, bus.ErrConflict) {
			next, err = leases.Acquire(ctx, a.leaseKey(), a.cfg.Identity, a.cfg.Grace)
			if errors.Is(err, bus.ErrAlreadyExists) {
				a.log.Error("another agent took this node; stopping", "err", err)
				stop(fmt.Errorf("nodeagent: node %s: %w (%v)", a.cfg.NodeName, ErrNodeTaken, err))
				return
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("heartbeat failed", "err", err)
			}
			continue
		}
		lease = next
		a.showHeartbeat(ctx, &lastStatus)
	}
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
