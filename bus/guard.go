package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Guards serialise decisions that span several keys. A Deployment grows
// one of its ReplicaSets by as much as the pods of the others leave room
// for: a compare-and-swap on the grown ReplicaSet cannot tell that another
// reconcile (of an older generation, in another process) has grown or
// created a sibling since the counts were taken, and two such growths
// would each fit the bound alone and break it together.
//
// A guard is a key of the store that holds no object, only a marker (a
// bare tombstone, which lists and watches pass over, as they do a bare
// fence). A writer reads the guard's revision before it counts, and makes
// its write as an atomic batch with a new marker, on condition that the
// guard still stands where it read it. Of two writes decided on the same
// counts, the second is refused with ErrConflict and decides again.

// opGuard marks a guard's marker.
const opGuard = "guard"

// JetStream's atomic batch headers.
const (
	headerBatchID     = "Nats-Batch-Id"
	headerBatchSeq    = "Nats-Batch-Sequence"
	headerBatchCommit = "Nats-Batch-Commit"
)

// Guard is a guard key and the revision at which a writer read it.
type Guard struct {
	Key      string
	Revision uint64 // 0: the key has never been written, or was compacted
}

// ReadGuard reads the guard at key as the stream's leader holds it: read it
// before taking the counts a guarded write depends on.
func (s *Store) ReadGuard(ctx context.Context, key string) (*Guard, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("%w: %q is not a valid key", ErrInvalid, key)
	}
	m, err := s.conn.lastMsg(ctx, s.stream(), s.subjPrefix+key)
	switch {
	case err == nil && !m.tombstone():
		return nil, fmt.Errorf("%w: guard %q holds an object", ErrInvalid, key)
	case err == nil:
		return &Guard{Key: key, Revision: m.seq}, nil
	case errors.Is(err, ErrNotFound):
		return &Guard{Key: key}, nil
	}
	return nil, fmt.Errorf("%s guard %q: %w", s.spec.Resource, key, err)
}

// publishGuarded writes data to key if the key stands at expect and g
// still stands at its revision, moving g in the same atomic batch; g then
// holds its new revision, for a next write by the same decision.
func (s *Store) publishGuarded(ctx context.Context, key string, data []byte, expect uint64, hdr nats.Header, g *Guard) (uint64, error) {
	if !validKey(key) || !validKey(g.Key) || key == g.Key {
		return 0, fmt.Errorf("%w: %q guarded by %q", ErrInvalid, key, g.Key)
	}
	if hdr == nil {
		hdr = nats.Header{}
	}
	injectTrace(ctx, hdr)
	marker := &nats.Msg{Subject: s.subjPrefix + g.Key, Header: nats.Header{kvOp: []string{kvDel}, HeaderOp: []string{opGuard}}}
	msg := &nats.Msg{Subject: s.subjPrefix + key, Header: hdr, Data: data}
	id := stampWrite(msg)
	batch := []*nats.Msg{marker, msg}
	expects := []uint64{g.Revision, expect}
	ack, err := s.conn.casLoop(ctx, casWrite{stream: s.stream(), subject: msg.Subject, expect: expect, id: id,
		guard: marker.Subject, guardAt: g.Revision,
		attempt: func(ctx context.Context) (*jetstream.PubAck, error) {
			return s.conn.publishBatchOnce(ctx, batch, expects)
		}})
	if err != nil {
		return 0, err
	}
	// A batch is stored in one piece, in order: the marker just before.
	g.Revision = ack.Sequence - 1
	return ack.Sequence, nil
}

// batchAck is the answer to the commit of an atomic batch.
type batchAck struct {
	Stream string              `json:"stream"`
	Seq    uint64              `json:"seq"`
	Count  int                 `json:"count"`
	Error  *jetstream.APIError `json:"error"`
}

// publishBatchOnce sends msgs as one atomic batch, each on condition that
// its subject stands at its expect: all are stored, in order, or none. It
// returns the last one's sequence.
func (c *Conn) publishBatchOnce(ctx context.Context, msgs []*nats.Msg, expects []uint64) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, publishTry)
	defer cancel()
	id := uuid.NewString()
	for i, m := range msgs {
		b := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: nats.Header{}}
		for k, v := range m.Header {
			b.Header[k] = v
		}
		b.Header.Set(headerBatchID, id)
		b.Header.Set(headerBatchSeq, strconv.Itoa(i+1))
		b.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expects[i], 10))
		if i < len(msgs)-1 {
			if err := c.nc.PublishMsg(b); err != nil {
				return nil, translate(err)
			}
			continue
		}
		b.Header.Set(headerBatchCommit, "1")
		reply, err := c.nc.RequestMsgWithContext(ctx, b)
		if err != nil {
			return nil, translate(err)
		}
		var ack batchAck
		if err := json.Unmarshal(reply.Data, &ack); err != nil {
			return nil, fmt.Errorf("bus: batch answer: %w", err)
		}
		if ack.Error != nil {
			return nil, translate(ack.Error)
		}
		if ack.Count != len(msgs) {
			return nil, fmt.Errorf("bus: batch of %d stored as %d", len(msgs), ack.Count)
		}
		return &jetstream.PubAck{Stream: ack.Stream, Sequence: ack.Seq}, nil
	}
	return nil, fmt.Errorf("%w: empty batch", ErrInvalid)
}

// allowBatches lets a stream made before guards existed take atomic
// batches.
func (c *Conn) allowBatches(ctx context.Context, stream string) error {
	st, err := c.js.Stream(ctx, stream)
	if err != nil {
		return translate(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.AllowAtomicPublish {
		return nil
	}
	cfg.AllowAtomicPublish = true
	_, err = c.js.UpdateStream(ctx, cfg)
	return translate(err)
}
