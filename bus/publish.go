package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/homeostat/homeostat/clock"
)

// Writes. Each attempt of a publish gets tryTimeout: its answer takes one
// replication round, and a stream leader that died holding the message
// never sends one. When an attempt goes unanswered, the write is made
// again soon after a new leader is elected, instead of after a long
// timeout; a compare-and-swap write carries an id of its own, so that one
// whose answer was lost is recognised in the stream if it landed.

// headerWriteID marks a compare-and-swap write with an id of its own.
const headerWriteID = "Homeostat-Write-Id"

// publish stores msg in its stream and returns the acknowledgement, in at
// most requestTimeout, trying again while the bus cannot answer. Only for
// writes that may harmlessly land twice (unconditional puts of the same
// bytes).
func (c *Conn) publish(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	var ack *jetstream.PubAck
	err := retried(ctx, func(ctx context.Context) error {
		var err error
		ack, err = c.publishOnce(ctx, msg, opts...)
		return err
	})
	return ack, err
}

func (c *Conn) publishOnce(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return c.publishBy(ctx, time.Time{}, msg, opts...)
}

// publishBy is one attempt of a publish, bounded by deadline (none when
// zero) or by tryTimeout from now, whichever comes sooner, and counted as
// a write.
func (c *Conn) publishBy(ctx context.Context, deadline time.Time, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := c.storeBy(ctx, deadline, msg, opts...)
	if err == nil {
		wroteAck(ack)
	}
	return ack, err
}

// storeOnce is one attempt of a publish, not counted among the store's
// writes (a confirmation's, see confirm.go).
func (c *Conn) storeOnce(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return c.storeBy(ctx, time.Time{}, msg, opts...)
}

// storeBy is storeOnce bounded by deadline too (none when zero): one
// context for both bounds, made only when it bounds more than ctx does.
// A write bounded first as a whole and then as an attempt made two, each
// with a timer registered with its parent: a tenth of a node agent's
// status write.
func (c *Conn) storeBy(ctx context.Context, deadline time.Time, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if try := time.Now().Add(tryTimeout); deadline.IsZero() || try.Before(deadline) {
		deadline = try
	}
	ctx, cancel := by(ctx, deadline)
	defer cancel()
	ack, err := c.js.PublishMsg(ctx, msg, opts...)
	return ack, translate(err)
}

// handOver sends msg to stream without waiting for the store's answer,
// and counts it as written: no one waits to know otherwise.
func (c *Conn) handOver(stream string, msg *nats.Msg, opts ...jetstream.PublishOpt) error {
	if _, err := c.js.PublishMsgAsync(msg, opts...); err != nil {
		return translate(err)
	}
	wrote(stream)
	return nil
}

// casPublish stores msg if its subject's last sequence in stream is still
// expect, in at most requestTimeout.
//
// A refused or unanswered attempt is checked against what the leader
// holds. The subject's last message is this write: an earlier attempt
// landed (its answer was lost), success. The subject moved past expect: a
// conflict, unless an earlier attempt went unanswered (it may have landed
// and been overwritten since), then the outcome is unknown
// (ErrUnavailable). The subject still stands at expect: nothing landed
// yet, so the write is made again. That also covers a leader's refusal of
// a write whose subject has another write in flight through consensus,
// which no read shows yet: answering that with a conflict would tell the
// client of a change it cannot see, and that may yet fail.
func (c *Conn) casPublish(ctx context.Context, stream string, msg *nats.Msg, expect uint64, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	// The write's bound is kept as a time, and made a context of its own
	// only for what follows a failed attempt: most writes take one.
	deadline := time.Now().Add(requestTimeout)
	id := nuid.Next()
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	msg.Header.Set(headerWriteID, id)
	opts = append(opts, jetstream.WithExpectLastSequencePerSubject(expect))
	pace := clock.Pace{First: 5 * time.Millisecond, Max: retryMax}
	uncertain := false
	for first := true; ; first = false {
		start := time.Now()
		ack, err := c.publishBy(ctx, deadline, msg, opts...)
		if err == nil || !errors.Is(err, ErrConflict) && !errors.Is(err, ErrUnavailable) {
			return ack, err
		}
		if first { // what follows a failed attempt is bounded by the write's deadline
			var cancel context.CancelFunc
			ctx, cancel = by(ctx, deadline)
			defer cancel()
		}
		uncertain = uncertain || errors.Is(err, ErrUnavailable)
		now, mine, lerr := c.standing(ctx, stream, msg.Subject, id)
		v := settle(casState{expect: expect, uncertain: uncertain, now: now, mine: mine, readErr: lerr}, err)
		switch {
		case v.landed:
			// An earlier attempt stored it; its answer was lost.
			wrote(stream)
			return &jetstream.PubAck{Stream: stream, Sequence: now}, nil
		case v.err != nil:
			return nil, v.err
		}
		// An attempt that ran out its time has waited enough already.
		if time.Since(start) < tryTimeout && !pace.Wait(ctx) || ctx.Err() != nil {
			return nil, unknownOutcome(uncertain, err)
		}
	}
}

// casState is what a compare-and-swap write knows after a failed attempt.
type casState struct {
	expect    uint64 // the sequence the write was conditioned on
	uncertain bool   // some attempt went unanswered: it may have landed
	now       uint64 // the subject's last sequence, as the leader holds it
	mine      bool   // ... and whether that message is this write
	readErr   error  // reading the leader failed
}

// casVerdict: the write landed, or it ends with err, or (neither) it is
// made again.
type casVerdict struct {
	landed bool
	err    error
}

// settle decides a compare-and-swap write after an attempt failed with
// err (a conflict or the bus not answering). A conflict is reported only
// when no attempt can have landed: an uncertain write whose fate cannot be
// read is ErrUnavailable alone, never a conflict, for a caller that took a
// conflict for "nothing was written" (a create answering AlreadyExists)
// would deny a write that stands.
func settle(st casState, err error) casVerdict {
	switch {
	case st.readErr == nil && st.mine:
		return casVerdict{landed: true}
	case st.readErr == nil && st.now != st.expect:
		return casVerdict{err: unknownOutcome(st.uncertain, err)}
	case st.readErr != nil && !errors.Is(st.readErr, ErrUnavailable):
		return casVerdict{err: unknownOutcome(st.uncertain, err)}
	}
	return casVerdict{}
}

// unknownOutcome is err, or, when an attempt may have landed, an error
// that matches ErrUnavailable and nothing else: what is known is that
// nothing is known.
func unknownOutcome(uncertain bool, err error) error {
	if !uncertain || !errors.Is(err, ErrConflict) {
		return err
	}
	return fmt.Errorf("%w: the write may have landed (then: %v)", ErrUnavailable, err)
}

// standing is the subject's last sequence (0: none) as the leader holds
// it, and whether that message is the write with id.
func (c *Conn) standing(ctx context.Context, stream, subject, id string) (seq uint64, mine bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, tryTimeout)
	defer cancel()
	m, err := c.lastMsg(ctx, stream, subject)
	switch {
	case errors.Is(err, ErrNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return m.seq, m.header.Get(headerWriteID) == id, nil
}
