package bus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Tombstones (delete markers) are what lets a resumed watch see a delete.
// They are kept for a while and then compacted away; the compaction revision
// is recorded first, so that a watch resuming from before it gets ErrGone
// and re-lists instead of silently missing a delete.

func (s *Store) compactKey() string { return "compacted." + s.spec.Bucket }

// CompactedRevision is the highest revision whose tombstone may be gone.
func (s *Store) CompactedRevision(ctx context.Context) (uint64, error) {
	e, err := s.meta.Get(ctx, s.compactKey())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, translate(err)
	}
	if len(e.Value()) != 8 {
		return 0, fmt.Errorf("bus: compaction record of %s is malformed", s.spec.Bucket)
	}
	return binary.BigEndian.Uint64(e.Value()), nil
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
		return fmt.Errorf("%w: %s resourceVersion %d is older than the compacted revision %d", ErrGone, s.spec.Bucket, after, c)
	}
	return nil
}

// raiseCompacted moves the compaction revision up to rev, never down, by
// compare-and-swap so that several compactors can run at once.
func (s *Store) raiseCompacted(ctx context.Context, rev uint64) error {
	for {
		e, err := s.meta.Get(ctx, s.compactKey())
		var cur, last uint64
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return translate(err)
		default:
			last = e.Revision()
			if len(e.Value()) == 8 {
				cur = binary.BigEndian.Uint64(e.Value())
			}
		}
		if cur >= rev {
			return nil
		}
		val := binary.BigEndian.AppendUint64(nil, rev)
		if last == 0 {
			_, err = s.meta.Create(ctx, s.compactKey(), val)
		} else {
			_, err = s.meta.Update(ctx, s.compactKey(), val, last)
		}
		if err == nil || !(errors.Is(translate(err), ErrConflict) || errors.Is(err, jetstream.ErrKeyExists)) {
			return translate(err)
		}
	}
}

// Compact removes tombstones written more than olderThan ago and returns how
// many it removed. Each removal is guarded by the tombstone's sequence, so a
// key recreated meanwhile is never touched.
func (s *Store) Compact(ctx context.Context, olderThan time.Duration) (int, error) {
	kw, err := s.kv.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		return 0, translate(err)
	}
	defer func() { _ = kw.Stop() }()
	cutoff := s.now().Add(-olderThan)
	type tomb struct {
		key string
		rev uint64
	}
	var tombs []tomb
	var maxRev uint64
	for e := range kw.Updates() {
		if e == nil {
			break
		}
		if e.Operation() == jetstream.KeyValuePut || e.Created().After(cutoff) {
			continue
		}
		tombs = append(tombs, tomb{e.Key(), e.Revision()})
		maxRev = max(maxRev, e.Revision())
	}
	if len(tombs) == 0 {
		return 0, nil
	}
	if err := s.raiseCompacted(ctx, maxRev); err != nil {
		return 0, err
	}
	stream, err := s.conn.JS.Stream(ctx, s.Stream())
	if err != nil {
		return 0, translate(err)
	}
	n := 0
	for _, t := range tombs {
		err := stream.Purge(ctx, jetstream.WithPurgeSubject(s.subjPrefix+t.key), jetstream.WithPurgeSequence(t.rev+1))
		if err != nil {
			return n, fmt.Errorf("bus: compact %s/%s: %w", s.spec.Bucket, t.key, translate(err))
		}
		n++
	}
	return n, nil
}
