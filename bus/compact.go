package bus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Tombstones (delete markers) are what lets a resumed watch see a delete.
// They are kept for a while and then compacted away; the compaction revision
// is recorded first, so that a watch resuming from before it gets ErrGone
// and re-lists instead of silently missing a delete.

func (s *Store) compactSubject() string { return kvPrefix(metaBucket) + "compacted." + s.bucket }

// CompactedRevision is the highest revision whose tombstone may be gone.
func (s *Store) CompactedRevision(ctx context.Context) (uint64, error) {
	rev, _, err := s.compacted(ctx)
	return rev, err
}

// compacted reads the compaction record: its value and its own revision.
func (s *Store) compacted(ctx context.Context) (uint64, uint64, error) {
	m, err := s.conn.lastMsg(ctx, kvStream(metaBucket), s.compactSubject())
	if errors.Is(err, ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if m.tombstone() {
		return 0, m.seq, nil
	}
	if len(m.data) != 8 {
		return 0, 0, fmt.Errorf("bus: compaction record of %s is malformed", s.spec.Resource)
	}
	return binary.BigEndian.Uint64(m.data), m.seq, nil
}

func (s *Store) checkNotCompacted(ctx context.Context, after uint64) error {
	if after == 0 {
		return nil
	}
	c, err := s.CompactedRevision(ctx)
	if err != nil {
		return err
	}
	if after < c {
		return fmt.Errorf("%w: %s resourceVersion %d is older than the compacted revision %d", ErrGone, s.spec.Resource, after, c)
	}
	return nil
}

// raiseCompacted moves the compaction revision up to rev, never down, by
// compare-and-swap so that several compactors can run at once.
func (s *Store) raiseCompacted(ctx context.Context, rev uint64) error {
	for {
		cur, last, err := s.compacted(ctx)
		if err != nil {
			return err
		}
		if cur >= rev {
			return nil
		}
		msg := &nats.Msg{Subject: s.compactSubject(), Data: binary.BigEndian.AppendUint64(nil, rev)}
		_, err = s.conn.casPublish(ctx, kvStream(metaBucket), msg, last)
		if err = translate(err); !errors.Is(err, ErrConflict) {
			return err
		}
	}
}

// Compact removes tombstones written more than olderThan ago and returns how
// many it removed. Each removal is guarded by the tombstone's sequence, so a
// key recreated meanwhile is never touched.
func (s *Store) Compact(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := s.now().Add(-olderThan)
	type tomb struct {
		key string
		rev uint64
	}
	var tombs []tomb
	var maxRev uint64
	// The whole stream: its confirmations, no tombstones, come along (see confirm.go).
	spec := readSpec{stream: s.stream(), filter: s.readFilter(s.filter("", "")), headersOnly: true, what: "compact " + s.spec.Resource, tries: oneShotTries}
	err := s.conn.read(ctx, spec,
		func(m rawMsg) error {
			if m.seq > 0 && !s.isConfirmation(m) && isTombstone(m.header) && !m.time.After(cutoff) {
				tombs = append(tombs, tomb{m.subject[len(s.subjPrefix):], m.seq})
				maxRev = max(maxRev, m.seq)
			}
			if m.caughtUp {
				return errStopRead
			}
			return nil
		})
	if err != nil || len(tombs) == 0 {
		return 0, err
	}
	if err := s.raiseCompacted(ctx, maxRev); err != nil {
		return 0, err
	}
	stream, err := s.conn.js.Stream(ctx, s.stream())
	if err != nil {
		return 0, translate(err)
	}
	n := 0
	for _, t := range tombs {
		err := stream.Purge(ctx, jetstream.WithPurgeSubject(s.subjPrefix+t.key), jetstream.WithPurgeSequence(t.rev+1))
		if err != nil {
			return n, fmt.Errorf("bus: compact %s/%s: %w", s.spec.Resource, t.key, translate(err))
		}
		n++
	}
	return n, nil
}
