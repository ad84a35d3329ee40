package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Leases are keys with a time-to-live, renewed by compare-and-swap: node
// heartbeats and the scheduler's leadership. When a holder stops renewing,
// the server removes the key and leaves a marker, so watchers see it go.
// TTLs are whole seconds, and the bucket keeps one revision per key (a
// longer history would silently raise the TTL). Holders name themselves
// with an identity that survives their restarts, so that a restarted
// holder takes its own lease back at once instead of waiting it out.
type Leases struct {
	conn   *Conn
	prefix string
}

// Lease is one lease's state.
type Lease struct {
	Key      string    `json:"-"`
	Holder   string    `json:"holder"`
	Renewed  time.Time `json:"renewed"`
	TTL      string    `json:"ttl"`
	Revision uint64    `json:"-"`
}

// NodeLeaseKey is the key of a node's heartbeat lease.
func NodeLeaseKey(node string) string { return nodeLeasePrefix + node }

// NodeOfLease is the node whose heartbeat lease key is key.
func NodeOfLease(key string) string { return strings.TrimPrefix(key, nodeLeasePrefix) }

const nodeLeasePrefix = "node."

// NodeLeases matches the keys of every node's heartbeat lease.
const NodeLeases = nodeLeasePrefix + ">"

// Leases opens (creating when needed) the lease bucket.
func (c *Conn) Leases(ctx context.Context) (*Leases, error) {
	if _, err := c.ensureBucket(ctx, bucketSpec{name: leaseBucket, keyTTL: time.Minute, description: "homeostat leases"}); err != nil {
		return nil, err
	}
	return &Leases{conn: c, prefix: kvPrefix(leaseBucket)}, nil
}

func ttlSeconds(ttl time.Duration) time.Duration {
	return max(time.Second, ttl.Round(time.Second))
}

// Acquire takes a lease that is free or already held by holder (a
// restarted holder taking its own lease back); one held by another is
// ErrAlreadyExists, with the holder named in the error.
func (l *Leases) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (*Lease, error) {
	for attempt := 0; ; attempt++ {
		m, err := l.conn.lastMsg(ctx, kvStream(leaseBucket), l.prefix+key)
		var expect uint64
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("lease %s: %w", key, err)
		case m.tombstone():
			expect = m.seq
		default:
			cur, derr := decodeLease(key, m.data, m.seq)
			if derr != nil {
				return nil, derr
			}
			if cur.Holder != holder {
				return cur, fmt.Errorf("lease %s: %w: held by %s, renewed %s ago", key, ErrAlreadyExists,
					cur.Holder, time.Since(cur.Renewed).Round(time.Second))
			}
			expect = m.seq
		}
		ls, err := l.write(ctx, key, holder, ttl, expect)
		if errors.Is(err, ErrConflict) && attempt < 5 {
			continue
		}
		return ls, err
	}
}

// Renew extends a lease held at revision rev; ErrConflict if someone else
// wrote it (or it expired and was taken).
func (l *Leases) Renew(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error) {
	return l.write(ctx, lease.Key, lease.Holder, ttl, lease.Revision)
}

func (l *Leases) write(ctx context.Context, key, holder string, ttl time.Duration, expect uint64) (*Lease, error) {
	ttl = ttlSeconds(ttl)
	ls := &Lease{Key: key, Holder: holder, Renewed: time.Now().UTC(), TTL: ttl.String()}
	data, err := json.Marshal(ls)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: l.prefix + key, Data: data, Header: nats.Header{}}
	ack, err := l.conn.casPublish(ctx, kvStream(leaseBucket), msg, expect, jetstream.WithMsgTTL(ttl))
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, translate(err))
	}
	ls.Revision = ack.Sequence
	return ls, nil
}

func decodeLease(key string, data []byte, rev uint64) (*Lease, error) {
	var ls Lease
	if err := json.Unmarshal(data, &ls); err != nil {
		return nil, &CorruptError{Resource: "leases", Key: key, Revision: rev, Reason: err.Error()}
	}
	ls.Key, ls.Revision = key, rev
	return &ls, nil
}

// Get reads a live lease from the leader; ErrNotFound when expired or released.
func (l *Leases) Get(ctx context.Context, key string) (*Lease, error) {
	m, err := l.conn.lastMsg(ctx, kvStream(leaseBucket), l.prefix+key)
	if err == nil && m.tombstone() {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	return decodeLease(key, m.data, m.seq)
}

// Release gives a lease up, unless someone else holds it by now.
func (l *Leases) Release(ctx context.Context, lease *Lease) error {
	msg := &nats.Msg{Subject: l.prefix + lease.Key, Header: nats.Header{kvOp: []string{kvDel}}}
	_, err := l.conn.casPublish(ctx, kvStream(leaseBucket), msg, lease.Revision)
	return translate(err)
}

// LeaseEvent reports a lease taken, renewed (Lease set) or gone (nil).
type LeaseEvent struct {
	Key    string
	Lease  *Lease
	Synced bool
}

// Watch reports the leases whose keys match (a key, or a pattern such as
// "node.>"), then their changes, until ctx ends.
func (l *Leases) Watch(ctx context.Context, keys string) (<-chan LeaseEvent, error) {
	if keys == "" || strings.ContainsAny(keys, " \t") {
		return nil, fmt.Errorf("%w: lease keys %q", ErrInvalid, keys)
	}
	spec := readSpec{stream: kvStream(leaseBucket), filter: l.prefix + keys, what: "leases " + keys}
	out := make(chan LeaseEvent, 256)
	send := func(le LeaseEvent) error {
		select {
		case out <- le:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	go func() {
		defer close(out)
		synced := false
		_ = l.conn.read(ctx, spec, func(m rawMsg) error {
			if m.seq > 0 {
				le := LeaseEvent{Key: strings.TrimPrefix(m.subject, l.prefix)}
				if !isTombstone(m.header) {
					if ls, err := decodeLease(le.Key, m.data, m.seq); err == nil {
						le.Lease = ls
					}
				}
				if synced || le.Lease != nil {
					if err := send(le); err != nil {
						return err
					}
				}
			}
			if !synced && m.caughtUp {
				synced = true
				return send(LeaseEvent{Synced: true})
			}
			return nil
		})
	}()
	return out, nil
}

// TTLDuration parses a lease's TTL.
func (ls *Lease) TTLDuration() time.Duration {
	d, _ := time.ParseDuration(ls.TTL)
	return d
}
