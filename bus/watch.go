package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/homeostat/homeostat/object"
)

// EventType says what happened to a key.
type EventType string

// Event types. Synced is the marker that follows the initial state.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Synced   EventType = "SYNCED"
	Failed   EventType = "ERROR"
)

// Event is one change seen by a watch.
type Event struct {
	Type     EventType
	Key      string
	Object   *object.Object // for Deleted, the object's last state
	Revision uint64
	// Header carries the trace context of the write.
	Header nats.Header
	Err    error
}

// Context returns ctx carrying the trace context of the write that caused the event.
func (e Event) Context(ctx context.Context) context.Context {
	if len(e.Header) == 0 {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(e.Header))
}

// WatchOptions tune Watch.
type WatchOptions struct {
	// Namespace limits the watch to one namespace.
	Namespace string
	// Key limits the watch to one key.
	Key string
	// AfterRevision resumes after this revision; 0 starts with the current
	// state (as Added events) followed by Synced.
	AfterRevision uint64
	// Buffer is the channel capacity; 256 when zero.
	Buffer int
}

func (s *Store) filter(namespace, key string) string {
	switch {
	case key != "":
		return s.subjPrefix + key
	case namespace != "":
		return s.subjPrefix + namespace + ".>"
	default:
		return s.subjPrefix + ">"
	}
}

// Watch streams changes until ctx ends, then closes the channel. With no
// AfterRevision it first sends every live object as Added, then Synced, then
// changes: a list and a watch in one. Resuming from a revision whose deletes
// have been compacted fails with ErrGone.
func (s *Store) Watch(ctx context.Context, opts WatchOptions) (<-chan Event, error) {
	if err := s.checkNotCompacted(ctx, opts.AfterRevision); err != nil {
		return nil, err
	}
	recheck := func() error { return s.checkNotCompacted(ctx, opts.AfterRevision) }
	return s.conn.watchStream(ctx, streamWatch{
		stream: s.Stream(), filter: s.filter(opts.Namespace, opts.Key), after: opts.AfterRevision,
		buffer: opts.Buffer, decode: s.toEvent, afterStart: recheck, name: s.spec.Bucket,
	})
}

// streamWatch describes a watch over any stream whose last message per
// subject is the state of a key.
type streamWatch struct {
	stream, filter, name string
	after                uint64
	buffer               int
	decode               func(subject string, hdr nats.Header, data []byte, seq uint64, live bool) Event
	afterStart           func() error
}

func (c *Conn) watchStream(ctx context.Context, sw streamWatch) (<-chan Event, error) {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{sw.filter},
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		InactiveThreshold: time.Minute,
	}
	if sw.after > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = sw.after + 1
	}
	cons, err := c.JS.OrderedConsumer(ctx, sw.stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: watch %s: %w", sw.name, translate(err))
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: watch %s: %w", sw.name, translate(err))
	}
	// A compaction that raced the consumer's start is caught here: it
	// records its revision before it purges.
	if sw.afterStart != nil {
		if err := sw.afterStart(); err != nil {
			return nil, err
		}
	}
	buf := sw.buffer
	if buf == 0 {
		buf = 256
	}
	w := &watchState{
		name:    sw.name,
		decode:  sw.decode,
		ch:      make(chan Event, buf),
		initial: sw.after == 0,
		pending: info.NumPending,
	}
	msgs, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("bus: watch %s: %w", sw.name, translate(err))
	}
	go w.run(ctx, msgs)
	return w.ch, nil
}

type watchState struct {
	name     string
	decode   func(subject string, hdr nats.Header, data []byte, seq uint64, live bool) Event
	ch       chan Event
	initial  bool
	pending  uint64
	received uint64
	synced   bool
}

func (w *watchState) run(ctx context.Context, msgs jetstream.MessagesContext) {
	defer close(w.ch)
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	defer msgs.Stop()
	if w.pending == 0 && !w.send(ctx, Event{Type: Synced}) {
		return
	}
	w.synced = w.pending == 0
	for {
		m, err := msgs.Next()
		if err != nil {
			if ctx.Err() == nil {
				w.send(ctx, Event{Type: Failed, Err: fmt.Errorf("bus: watch %s: %w", w.name, translate(err))})
			}
			return
		}
		if !w.handle(ctx, m) {
			return
		}
	}
}

func (w *watchState) handle(ctx context.Context, m jetstream.Msg) bool {
	md, err := m.Metadata()
	if err != nil {
		return true
	}
	ev := w.decode(m.Subject(), m.Headers(), m.Data(), md.Sequence.Stream, w.synced || !w.initial)
	if ev.Type != "" && !(ev.Type == Deleted && !w.synced && w.initial) {
		if !w.send(ctx, ev) {
			return false
		}
	}
	if !w.synced {
		w.received++
		if w.received >= w.pending || md.NumPending == 0 {
			w.synced = true
			return w.send(ctx, Event{Type: Synced})
		}
	}
	return true
}

func (w *watchState) send(ctx context.Context, ev Event) bool {
	select {
	case w.ch <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// toEvent classifies one stored message. Before sync, every value is Added.
func (s *Store) toEvent(subject string, hdr nats.Header, data []byte, seq uint64, live bool) Event {
	key := subject[len(s.subjPrefix):]
	ev := Event{Key: key, Revision: seq, Header: hdr}
	op := hdr.Get(kvOp)
	if op == "" && hdr.Get(jetstream.MarkerReasonHeader) != "" {
		op = kvDel
	}
	switch {
	case op == kvDel || op == kvPurge:
		ev.Type = Deleted
	case !live || hdr.Get(HeaderOp) == opCreate:
		ev.Type = Added
	default:
		ev.Type = Modified
	}
	if len(data) > 0 {
		var o object.Object
		if err := json.Unmarshal(data, &o); err != nil {
			ev.Type, ev.Err = Failed, fmt.Errorf("bus: %s/%s undecodable at revision %d: %w", s.spec.Bucket, key, seq, err)
			return ev
		}
		o.Metadata.ResourceVersion = fmt.Sprint(seq)
		ev.Object = &o
	}
	if ev.Object == nil && ev.Type != Deleted {
		return Event{}
	}
	return ev
}
