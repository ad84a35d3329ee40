package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A node's agent keeps its heartbeat lease through the node relay (see
// relay.go): the relay writes only the lease of the node whose subject
// the request came on, so a node's credentials need no subject of the
// leases' bucket.

// MaxHeartbeatTTL bounds the time to live a node may ask for: a longer one
// would keep a dead node looking alive that long.
const MaxHeartbeatTTL = time.Hour

// maxHolder bounds a heartbeat's holder, which the lease stores.
const maxHolder = 253

// relayLease is a heartbeat lease on the relay's wire: Lease keeps its key
// and revision out of its stored JSON.
type relayLease struct {
	Holder   string    `json:"holder"`
	TTL      string    `json:"ttl"`
	Renewed  time.Time `json:"renewed,omitzero"`
	Revision uint64    `json:"revision,omitempty"`
}

// Acquire takes the node's heartbeat lease through the relay, as
// Leases.Acquire does: ErrAlreadyExists while another holder's is live.
// key must be the node's own (NodeLeaseKey).
func (w *NodeWriter) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (*Lease, error) {
	return w.heartbeat(ctx, "acquire", key, relayLease{Holder: holder, TTL: ttl.String()})
}

// Renew extends the node's heartbeat lease held at lease.Revision, as
// Leases.Renew does: ErrConflict when it was written since.
func (w *NodeWriter) Renew(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error) {
	return w.heartbeat(ctx, "renew", lease.Key, relayLease{Holder: lease.Holder, TTL: ttl.String(), Revision: lease.Revision})
}

func (w *NodeWriter) heartbeat(ctx context.Context, op, key string, ls relayLease) (*Lease, error) {
	if want := NodeLeaseKey(w.node); key != want {
		return nil, fmt.Errorf("bus: heartbeat: %w: lease %q: node %s keeps only %q", ErrForbidden, key, w.node, want)
	}
	rep, err := w.conn.askRelay(ctx, "node relay", heartbeatSubject(w.node), relayRequest{Op: op, Lease: &ls})
	if err != nil {
		return nil, err
	}
	if rep.Lease == nil {
		return nil, fmt.Errorf("bus: node relay: a heartbeat's reply without its lease")
	}
	return &Lease{Key: key, Holder: rep.Lease.Holder, Renewed: rep.Lease.Renewed, TTL: rep.Lease.TTL, Revision: rep.Lease.Revision}, nil
}

// heartbeatLeases is what the relay needs of the leases.
type heartbeatLeases interface {
	Acquire(ctx context.Context, key, holder string, ttl time.Duration) (*Lease, error)
	Renew(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error)
}

// relayHeartbeat takes or renews node's heartbeat lease: its key is the
// node's, whatever the request says.
func relayHeartbeat(ctx context.Context, leases heartbeatLeases, node string, data []byte) relayReply {
	var req relayRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return failed(fmt.Errorf("%w: %v", ErrInvalid, err))
	}
	ttl, err := validHeartbeat(req.Op, req.Lease)
	if err != nil {
		return failed(err)
	}
	key := NodeLeaseKey(node)
	var ls *Lease
	if req.Op == "acquire" {
		ls, err = leases.Acquire(ctx, key, req.Lease.Holder, ttl)
	} else {
		ls, err = leases.Renew(ctx, &Lease{Key: key, Holder: req.Lease.Holder, Revision: req.Lease.Revision}, ttl)
	}
	if err != nil {
		return failed(err)
	}
	return relayReply{Lease: &relayLease{Holder: ls.Holder, TTL: ls.TTL, Renewed: ls.Renewed, Revision: ls.Revision}}
}

// validHeartbeat is the relay's rule for a heartbeat request; it returns
// the time to live asked for.
func validHeartbeat(op string, ls *relayLease) (time.Duration, error) {
	switch {
	case op != "acquire" && op != "renew":
		return 0, fmt.Errorf("%w: op %q: a heartbeat is acquire or renew", ErrInvalid, op)
	case ls == nil:
		return 0, fmt.Errorf("%w: a heartbeat needs its lease", ErrInvalid)
	case ls.Holder == "" || len(ls.Holder) > maxHolder:
		return 0, fmt.Errorf("%w: lease.holder %q: must be 1 to %d characters", ErrInvalid, ls.Holder, maxHolder)
	case op == "renew" && ls.Revision == 0:
		return 0, fmt.Errorf("%w: lease.revision: a renewal names the revision it holds", ErrInvalid)
	}
	ttl, err := time.ParseDuration(ls.TTL)
	if err != nil || ttl < time.Second || ttl > MaxHeartbeatTTL {
		return 0, fmt.Errorf("%w: lease.ttl %q: must be a duration from 1s to %s", ErrInvalid, ls.TTL, MaxHeartbeatTTL)
	}
	return ttl, nil
}

// A node's heartbeat requests are limited, each node's on its own: an
// agent renews every few seconds, so a node asking more than heartbeatRate
// times a second floods the relay. Its excess is refused as it comes off
// the subscription, before it is decoded or takes a worker, for the price
// of a map lookup, and writes nothing; unchecked, each
// request of a flood was a store write, on the workers every node's
// heartbeats share, and a node could make the others' lapse.
const (
	heartbeatRate  = 10
	heartbeatBurst = 20
	// MinHeartbeatEvery is the shortest renewal period an agent may have:
	// half the rate, as a renewal refused for a conflict is followed by an
	// acquire.
	MinHeartbeatEvery = 2 * time.Second / heartbeatRate
	// sweepFloor: the limits are not swept before they hold twice this
	// many nodes.
	sweepFloor = 1024
)

// heartbeatLimits holds each node's rate of heartbeat requests.
type heartbeatLimits struct {
	mu    sync.Mutex
	nodes map[string]*rate.Limiter
	// swept is how many nodes were left at the last sweep.
	swept int
}

// allow reports whether node may make a heartbeat request at now.
func (l *heartbeatLimits) allow(node string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.nodes[node]
	if lim == nil {
		if l.nodes == nil {
			l.nodes = map[string]*rate.Limiter{}
		}
		if len(l.nodes) >= 2*max(l.swept, sweepFloor) {
			l.sweep(now)
		}
		lim = rate.NewLimiter(heartbeatRate, heartbeatBurst)
		l.nodes[node] = lim
	}
	return lim.AllowN(now, 1)
}

// sweep forgets the nodes whose allowance is whole again, as a node not
// yet seen starts: forgetting them loses nothing.
func (l *heartbeatLimits) sweep(now time.Time) {
	for n, lim := range l.nodes {
		if lim.TokensAt(now) >= heartbeatBurst {
			delete(l.nodes, n)
		}
	}
	l.swept = len(l.nodes)
}
