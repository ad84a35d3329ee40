package bus

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Confirmed revisions. A stream's leader cut off from its peers goes on
// taking itself for the leader until it notices it has lost its quorum
// (ten seconds without them), while the others elect a leader within
// four to nine seconds and take writes; a leader frozen for a while and
// thawed does the same for a moment. Either answers STREAM.INFO and
// message gets from its own, stale, state. So a read that must hold every
// acknowledged write takes its revision from a write instead: an empty
// message on the bucket's confirmation subject, which only a leader its
// quorum follows can store. Every write acknowledged before it lies below
// its sequence, and a read reaches that sequence by seeing the message
// itself (or the next one; the subject keeps its last message only), so
// it does not rely on another leader's answer for what lies below.
//
// The subject, $KV.<bucket>, is in the bucket's stream but outside every
// key's ($KV.<bucket>.<key>), so that reads of some keys never see it.
// A read of every key reads the whole stream, confirmations included (a
// consumer without a filter costs the server least; one with two filters,
// the keys' and the confirmations', cost a list of 10,000 pods a second),
// and passes them over, or, for a list or an informer's watch, learns
// from them how far it got.

// readFilter is what a read of filter's keys asks its consumer for: the
// whole stream (">", which the server serves as no filter) for every key.
func (s *Store) readFilter(filter string) string {
	if filter == s.filter("", "") {
		return wholeStream
	}
	return filter
}

// wholeStream is the filter of a read of every subject of a stream.
const wholeStream = ">"

// confirmSubject is the confirmation subject of a bucket.
func confirmSubject(bucket string) string { return "$KV." + bucket }

// confirmSubject is the confirmation subject of the store's bucket.
func (s *Store) confirmSubject() string { return confirmSubject(s.bucket) }

// isConfirmation says whether a message read from the store's stream is a
// confirmation, not a key's.
func (s *Store) isConfirmation(m rawMsg) bool { return len(m.subject) < len(s.subjPrefix) }

// confirmed is a revision of the store that a quorum of its stream's
// replicas has stored, at least that of every write acknowledged before
// the call: the sequence of a confirmation written now.
func (s *Store) confirmed(ctx context.Context) (uint64, error) {
	// Not counted as a write: the bench's and the metrics' writes are
	// what changes the store.
	var ack *jetstream.PubAck
	err := retried(ctx, func(ctx context.Context) error {
		var err error
		ack, err = s.conn.storeOnce(ctx, &nats.Msg{Subject: s.confirmSubject()})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("bus: confirming the latest revision of %s: %w", s.spec.Resource, err)
	}
	if ack.Stream != s.stream() {
		return 0, fmt.Errorf("%w: %s's confirmation was stored by stream %s", ErrIncompatible, s.spec.Resource, ack.Stream)
	}
	return ack.Sequence, nil
}

// confirmation is a read's confirmed revision, written when first needed
// and once only: a limited list that gives way to a full read confirms
// once.
type confirmation struct {
	s   *Store
	rev uint64
}

func (c *confirmation) get(ctx context.Context) (uint64, error) {
	if c.rev == 0 {
		rev, err := c.s.confirmed(ctx)
		if err != nil {
			return 0, err
		}
		c.rev = rev
	}
	return c.rev, nil
}

// guardBucket puts a bucket's stream, made new or by an older version,
// in the shape this one needs: a bucket of objects gets its confirmation
// subject; every bucket without delete markers refuses rollups. A rollup
// (a message with Nats-Rollup) purges a whole stream, and the confined
// roles and the nodes may publish on confirmation subjects and on some
// keys; nothing here rolls up (compaction purges through the JetStream
// API, which they may not use). The server keeps rollups on in a bucket
// with delete markers (the leases'). A connection that may not change
// streams waits for the control plane to do it.
func (c *Conn) guardBucket(ctx context.Context, spec bucketSpec) error {
	st, err := c.js.Stream(ctx, kvStream(spec.name))
	if err != nil {
		return fmt.Errorf("bus: open bucket %s: %w", spec.name, translate(err))
	}
	cfg := st.CachedInfo().Config
	if !guarded(&cfg, spec) {
		return nil
	}
	if c.openOnly {
		return fmt.Errorf("bus: bucket %s: %w", spec.name, errNotGuarded)
	}
	if st, err = c.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("bus: bucket %s: adding its confirmation subject, refusing rollups: %w", spec.name, translate(err))
	}
	if got := st.CachedInfo().Config; guarded(&got, spec) {
		return fmt.Errorf("%w: bucket %s: the server kept rollups allowed or left out its confirmation subject", ErrIncompatible, spec.name)
	}
	return nil
}

// errNotGuarded: a bucket's stream lacks its confirmation subject, or
// allows rollups, and this connection may not change it.
var errNotGuarded = fmt.Errorf("%w: it has no confirmation subject yet, or allows rollups (the API puts that right; one older than this process does not)", ErrUnavailable)

// guarded brings a bucket's stream configuration to what guardBucket
// wants, saying whether it changed anything. Any update of a bucket's
// stream goes through it, so that one made from an older reading does
// not undo it.
func guarded(cfg *jetstream.StreamConfig, spec bucketSpec) bool {
	changed := false
	if spec.confirmable && !slices.Contains(cfg.Subjects, confirmSubject(spec.name)) {
		cfg.Subjects = append(cfg.Subjects, confirmSubject(spec.name))
		changed = true
	}
	if spec.keyTTL == 0 && cfg.AllowRollup {
		cfg.AllowRollup = false
		changed = true
	}
	return changed
}
