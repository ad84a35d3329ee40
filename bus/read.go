package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/clock"
)

// Every list, watch and scan reads a stream through a reader: an ephemeral
// consumer of its own that it deletes when it ends, so that reads leave
// nothing behind on the server (a consumer also expires on its own
// readInactive after its reader dies). A reader notices a lost or broken
// delivery — missed heartbeats (the consumer's server died, the
// connection moved, a stream leader change took the consumer with it), a
// gap in the delivery sequence (dropped messages) or a failed pull — and
// resumes with a new consumer right after the last stream sequence it
// delivered, so the caller sees every message once and in order.

const (
	readHeartbeat = 500 * time.Millisecond
	readExpiry    = 5 * time.Second
	readInactive  = 30 * time.Second
	readBatch     = 512
)

// readSpec says what to read.
type readSpec struct {
	stream string
	// ended, when set, is called as a watch's read ends.
	ended func()
	// filter is the subjects to read (wholeStream: every one).
	filter string
	// start is the first stream sequence to deliver; 0 delivers the last
	// message of each subject first, then every later one.
	start uint64
	// startTime, when set and start is 0, delivers from the first message
	// stored at or after it.
	startTime   time.Time
	headersOnly bool
	// what names the read in errors and metrics.
	what string
	// tries bounds a one-shot read (a list, a scan): after this many lost
	// deliveries it gives up with the last error, so that its caller can
	// answer "unavailable" instead of waiting out a failover. 0 for a watch,
	// which keeps trying until its context ends.
	tries int
	// check, when set, is called once each consumer that starts at a
	// sequence exists, to confirm that reading from there misses nothing
	// (ErrGone when what lies before it has been compacted meanwhile).
	check func(ctx context.Context, seq uint64) error
}

// rawMsg is one message as read; a marker (seq 0) only says caughtUp.
type rawMsg struct {
	subject string
	header  nats.Header
	data    []byte
	seq     uint64
	time    time.Time
	// caughtUp: nothing was pending for the consumer when it was delivered.
	caughtUp bool
}

// oneShotTries is how many lost deliveries a list or scan survives.
const oneShotTries = 3

// errStopRead ends a read from its callback without an error.
var errStopRead = errors.New("stop reading")

// errLostDelivery is what a reader recovers from by resuming.
var errLostDelivery = errors.New("delivery lost")

// read calls fn for every message in stream order, and with a marker when
// the stream holds nothing to read at the start, until ctx ends, fn
// returns an error (errStopRead ends it cleanly), or the stream is gone.
func (c *Conn) read(ctx context.Context, spec readSpec, fn func(rawMsg) error) error {
	r := &reader{conn: c, spec: spec, next: spec.start, fn: fn}
	pace := clock.Pace{First: 50 * time.Millisecond, Max: retryMax}
	for try := 1; ; try++ {
		err := r.once(ctx)
		switch {
		case errors.Is(err, errStopRead):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !errors.Is(err, errLostDelivery) && !errors.Is(err, ErrUnavailable):
			return err
		case spec.tries > 0 && try >= spec.tries:
			return wrap(ErrUnavailable, err)
		}
		readRestarts.WithLabelValues(spec.stream, restartReason(err)).Inc()
		c.log.Debug("read lost its delivery; resuming", "what", spec.what, "at", r.next, "err", err)
		if r.delivered {
			pace.Reset()
		}
		if !pace.Wait(ctx) {
			return ctx.Err()
		}
	}
}

func restartReason(err error) string {
	switch {
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		return "heartbeat"
	case errors.Is(err, errGap):
		return "gap"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	default:
		return "error"
	}
}

var errGap = errors.New("gap in the delivery sequence")

// reader is one read's position. On our streams (one message per
// subject) a last-per-subject consumer delivers in stream order, so
// resuming right after the last sequence delivered misses nothing; before
// the first message, it simply starts over.
type reader struct {
	conn *Conn
	spec readSpec
	fn   func(rawMsg) error
	next uint64 // stream sequence to resume from; 0: start over
	// delivered: the current consumer handed over at least one message.
	delivered bool
}

// once reads with one consumer until it is lost, fn stops it, or ctx ends.
func (r *reader) once(ctx context.Context) error {
	r.delivered = false
	cfg := jetstream.ConsumerConfig{
		Name:              "hs_" + uuid.NewString()[:18],
		FilterSubject:     r.spec.filter,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: readInactive,
		HeadersOnly:       r.spec.headersOnly,
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
	}
	switch {
	case r.next > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.next
	case !r.spec.startTime.IsZero():
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &r.spec.startTime
	}
	cons, err := r.conn.createConsumer(ctx, r.spec.stream, cfg)
	if err != nil {
		return fmt.Errorf("bus: read %s: %w", r.spec.what, translate(err))
	}
	consumersOpen.Inc()
	defer func() {
		consumersOpen.Dec()
		// Deleted now rather than left to expire, so that a busy API does
		// not pile up consumers.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = r.conn.rjs.DeleteConsumer(dctx, r.spec.stream, cfg.Name)
		cancel()
	}()
	// A compaction that raced the consumer's creation is caught here: it
	// records its revision before it purges.
	if r.next > 0 && r.spec.check != nil {
		if err := r.spec.check(ctx, r.next); err != nil {
			return err
		}
	}
	if cons.CachedInfo().NumPending == 0 {
		if err := r.fn(rawMsg{caughtUp: true}); err != nil {
			return err
		}
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(readBatch), jetstream.PullExpiry(readExpiry),
		jetstream.PullHeartbeat(readHeartbeat), jetstream.WithMessagesErrOnMissingHeartbeat(true))
	if err != nil {
		return fmt.Errorf("bus: read %s: %w", r.spec.what, translate(err))
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	var consumerSeq uint64
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("bus: read %s: %w: %w", r.spec.what, errLostDelivery, err)
		}
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		if md.Sequence.Consumer != consumerSeq+1 {
			return fmt.Errorf("bus: read %s: %w: %w (delivery %d after %d)", r.spec.what, errLostDelivery, errGap,
				md.Sequence.Consumer, consumerSeq)
		}
		consumerSeq = md.Sequence.Consumer
		seq := md.Sequence.Stream
		if seq < r.next {
			continue // already delivered by the consumer this one replaces
		}
		r.next, r.delivered = seq+1, true
		msg := rawMsg{subject: m.Subject(), header: m.Headers(), data: m.Data(), seq: seq,
			time: md.Timestamp, caughtUp: md.NumPending == 0}
		if err := r.fn(msg); err != nil {
			return err
		}
	}
}

// createConsumer makes a read's consumer. A create request cannot be taken
// back once sent: the server may make the consumer after the caller has
// given up on the answer. So the request runs to its answer on its own,
// and when ctx ends first createConsumer returns at once and leaves the
// consumer, if made, to be deleted as soon as the answer comes.
func (c *Conn) createConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	type created struct {
		cons jetstream.Consumer
		err  error
	}
	done := make(chan created, 1)
	go func() {
		// Made again under the same name when unanswered: creating a
		// consumer that exists with the same configuration returns it.
		var cons jetstream.Consumer
		err := retried(context.WithoutCancel(ctx), func(ctx context.Context) error {
			var err error
			cons, err = c.rjs.CreateConsumer(ctx, stream, cfg)
			return translate(err)
		})
		done <- created{cons, err}
	}()
	select {
	case r := <-done:
		return r.cons, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = c.rjs.DeleteConsumer(dctx, stream, cfg.Name)
				cancel()
			}
		}()
		return nil, ctx.Err()
	}
}
