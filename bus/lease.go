package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Leases are keys with a time-to-live, renewed by compare-and-swap: node
// heartbeats and the scheduler's leadership. When a holder stops renewing,
// the server removes the key and leaves a marker, so watchers see it go.
// TTLs are whole seconds, and the bucket keeps one revision per key (a
// longer history would silently raise the TTL).
type Leases struct {
	conn   *Conn
	kv     jetstream.KeyValue
	prefix string
}

// LeaseBucket holds every lease.
const LeaseBucket = "hs_leases"

// Lease is one lease's state.
type Lease struct {
	Key      string    `json:"-"`
	Holder   string    `json:"holder"`
	Renewed  time.Time `json:"renewed"`
	TTL      string    `json:"ttl"`
	Revision uint64    `json:"-"`
}

// Leases opens (creating when needed) the lease bucket.
func (c *Conn) Leases(ctx context.Context) (*Leases, error) {
	kv, err := c.EnsureBucket(ctx, BucketSpec{Name: LeaseBucket, KeyTTL: time.Minute, Description: "homeostat leases"})
	if err != nil {
		return nil, err
	}
	return &Leases{conn: c, kv: kv, prefix: "$KV." + LeaseBucket + "."}, nil
}

func ttlSeconds(ttl time.Duration) time.Duration {
	return max(time.Second, ttl.Round(time.Second))
}

// Acquire takes a free lease for ttl; a held one is ErrAlreadyExists.
func (l *Leases) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (*Lease, error) {
	last, err := l.freeRevision(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.write(ctx, key, holder, ttl, last)
}

// Renew extends a lease held at revision rev; ErrConflict if someone else
// wrote it (or it expired and was taken).
func (l *Leases) Renew(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error) {
	return l.write(ctx, lease.Key, lease.Holder, ttl, lease.Revision)
}

// Put writes a lease whatever its state: for a holder that owns the key by
// name (a node's heartbeat).
func (l *Leases) Put(ctx context.Context, key, holder string, ttl time.Duration) (*Lease, error) {
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := l.Get(ctx, key)
		var rev uint64
		switch {
		case errors.Is(err, ErrNotFound):
			rev, err = l.freeRevision(ctx, key)
			if err != nil && !errors.Is(err, ErrAlreadyExists) {
				return nil, err
			}
		case err != nil:
			return nil, err
		default:
			rev = cur.Revision
		}
		ls, err := l.write(ctx, key, holder, ttl, rev)
		if errors.Is(err, ErrConflict) {
			continue
		}
		return ls, err
	}
	return nil, ErrConflict
}

func (l *Leases) write(ctx context.Context, key, holder string, ttl time.Duration, expect uint64) (*Lease, error) {
	ttl = ttlSeconds(ttl)
	ls := &Lease{Key: key, Holder: holder, Renewed: time.Now().UTC(), TTL: ttl.String()}
	data, err := json.Marshal(ls)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: l.prefix + key, Data: data, Header: nats.Header{}}
	ack, err := l.conn.JS.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(expect), jetstream.WithMsgTTL(ttl))
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, translate(err))
	}
	ls.Revision = ack.Sequence
	return ls, nil
}

// freeRevision is the revision a create must name: 0 for a new key, the
// marker's for an expired or released one; ErrAlreadyExists when held.
func (l *Leases) freeRevision(ctx context.Context, key string) (uint64, error) {
	stream, err := l.conn.JS.Stream(ctx, "KV_"+LeaseBucket)
	if err != nil {
		return 0, translate(err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, l.prefix+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, translate(err)
	}
	if op := msg.Header.Get(kvOp); op == kvDel || op == kvPurge || msg.Header.Get(jetstream.MarkerReasonHeader) != "" {
		return msg.Sequence, nil
	}
	return 0, fmt.Errorf("lease %s: %w", key, ErrAlreadyExists)
}

// Get reads a live lease; ErrNotFound when expired or released.
func (l *Leases) Get(ctx context.Context, key string) (*Lease, error) {
	e, err := l.kv.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, translate(err))
	}
	var ls Lease
	if err := json.Unmarshal(e.Value(), &ls); err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	ls.Key, ls.Revision = key, e.Revision()
	return &ls, nil
}

// Release gives a lease up.
func (l *Leases) Release(ctx context.Context, lease *Lease) error {
	err := l.kv.Delete(ctx, lease.Key, jetstream.LastRevision(lease.Revision))
	return translate(err)
}

// LeaseEvent reports a lease taken, renewed (Lease set) or gone (nil).
type LeaseEvent struct {
	Key    string
	Lease  *Lease
	Synced bool
}

// Watch reports every lease under prefix (e.g. "node."), then changes.
func (l *Leases) Watch(ctx context.Context, prefix string) (<-chan LeaseEvent, error) {
	w, err := l.kv.Watch(ctx, prefix+">")
	if err != nil {
		return nil, translate(err)
	}
	ch := make(chan LeaseEvent, 256)
	go func() {
		defer close(ch)
		defer func() { _ = w.Stop() }()
		for {
			var ev LeaseEvent
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					ev.Synced = true
				} else {
					ev.Key = e.Key()
					if e.Operation() == jetstream.KeyValuePut {
						var ls Lease
						if json.Unmarshal(e.Value(), &ls) == nil {
							ls.Key, ls.Revision = e.Key(), e.Revision()
							ev.Lease = &ls
						}
					}
				}
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

// TTLDuration parses a lease's TTL.
func (ls *Lease) TTLDuration() time.Duration {
	d, _ := time.ParseDuration(ls.TTL)
	return d
}
