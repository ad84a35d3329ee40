package bus

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
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
// key's ($KV.<bucket>.<key>), so that reads of keys never see it; reads
// that want to know how far they got (lists, informers' watches) ask for
// it as well. So does every read of all the keys, only to keep its
// consumer's filters equal to the stream's subjects: the server serves
// such a consumer as an unfiltered one, which costs it less a message.

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
	ack, err := s.conn.publish(ctx, &nats.Msg{Subject: s.confirmSubject()})
	if err != nil {
		return 0, fmt.Errorf("bus: confirming the latest revision of %s: %w", s.spec.Resource, err)
	}
	if ack.Stream != s.stream() {
		return 0, fmt.Errorf("%w: %s's confirmation was stored by stream %s", ErrIncompatible, s.spec.Resource, ack.Stream)
	}
	return ack.Sequence, nil
}

// ensureConfirmations adds the confirmation subject to the stream of a
// bucket of objects, made new or before there was one. The bus's own
// buckets have none: nothing reads them as a client's list does.
func (c *Conn) ensureConfirmations(ctx context.Context, spec bucketSpec) error {
	if !spec.confirmable {
		return nil
	}
	bucket := spec.name
	st, err := c.js.Stream(ctx, kvStream(bucket))
	if err != nil {
		return fmt.Errorf("bus: open bucket %s: %w", bucket, translate(err))
	}
	cfg := st.CachedInfo().Config
	if slices.Contains(cfg.Subjects, confirmSubject(bucket)) {
		return nil
	}
	cfg.Subjects = append(cfg.Subjects, confirmSubject(bucket))
	if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("bus: bucket %s: adding its confirmation subject: %w", bucket, translate(err))
	}
	return nil
}
