package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/object"
)

// EventType says what happened to a key.
type EventType string

// Event types. Synced is the marker that says the watch has caught up
// (after the initial state, or the backlog of a resumed watch); its
// Revision is the last one it has delivered.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Synced   EventType = "SYNCED"
	// Corrupt: the key now holds a value that is not a valid object (see
	// ErrCorrupt); Err says why. Watchers treat the key as absent.
	Corrupt EventType = "CORRUPT"
	// Failed ends a watch that cannot go on (ErrGone: list again).
	Failed EventType = "ERROR"
	// Progress, to a watch that asked for it, says it has passed Revision
	// with no change to report: a revision confirmed since it began (see
	// Store.LastRevision), which a reader may be waiting to reach.
	Progress EventType = "PROGRESS"
)

// Event is one change seen by a watch.
type Event struct {
	Type     EventType
	Key      string
	Object   *object.Object // for Deleted, the object's last state when known
	Revision uint64
	// Time is when the store took the write (zero for a Synced or Error
	// event).
	Time time.Time
	// Trace is the trace context of the write.
	Trace trace.SpanContext
	Err   error
	// Raw is the stored value, undecoded, for a watch that asked for it
	// (WatchOptions.Raw); nil for a bare delete.
	Raw []byte
	// Layout is where the stored value's parts lie, as its writer said
	// (zero when it did not): a reader of Raw that needs only a part
	// reads it alone.
	Layout object.Layout
	// StatusBy is, for a change of the status alone read live (after
	// Synced, or anything a resumed watch reads), the name of the Author
	// its writer's context held; "" otherwise.
	StatusBy string
	// shared is the object's entry among the store's shared objects, for
	// an event of a shared watch.
	shared *decoded
}

// JSON returns the event's object as served (resourceVersion set),
// encoded once for every shared reader of the store; nil when the event
// did not come from a shared watch, is a delete, or its Object has been
// replaced since.
func (e Event) JSON() []byte {
	if e.shared == nil || e.Object == nil || e.shared.object() != e.Object {
		return nil
	}
	return e.shared.encoded(e.Object)
}

// Context returns ctx carrying the trace context of the write that caused the event.
func (e Event) Context(ctx context.Context) context.Context { return WithSpan(ctx, e.Trace) }

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
	// Shared accepts objects shared with the store's other shared readers
	// (lists, watches and informers of the process), which the caller
	// must not change: while two or more read (or a Serving one), each
	// change is decoded once for them all, and Event.JSON serves its
	// JSON, encoded once.
	Shared bool
	// Serving marks a Shared watch whose reader serves its objects' JSON
	// later (a cache that answers lists, with Store.PageOf): the store
	// keeps them shared, each with the JSON encoded for it, even when no
	// other reader shares them.
	Serving bool
	// SkipStatus leaves out, undecoded, the changes made after Synced that
	// changed only an object's status (what the status subresource would
	// take): for a reader that acts on the rest alone.
	SkipStatus bool
	// SkipCreate leaves out, undecoded, the creates made after Synced
	// whose stored JSON it reports: for a reader that a new object
	// concerns only in some states it can tell from a few fields (the
	// nodes' index, a pod not yet bound). Later changes of such an object
	// come as Modified. l is where the writer placed the value's parts,
	// when it said (see Event.Layout).
	SkipCreate func(value []byte, l object.Layout) bool
	// Raw leaves each change undecoded: events carry the stored JSON in
	// Raw (without the resourceVersion, which is the Revision) and no
	// Object, and a value that is not an object is not reported Corrupt.
	// For a reader of a few fields, which it decodes itself.
	Raw bool
	// Progress asks a watch of every key for Progress events after Synced.
	Progress bool
	// Prior, when set, is asked for the reader's copy of a key at an
	// earlier revision: a change whose writer left the head as that
	// revision had it (a status written, a pod bound) is then decoded
	// over it, its metadata shared, not decoded again. Prior returns nil
	// when it does not hold that revision; what it returns must keep the
	// metadata as it was decoded. Not used by a watch a store's fanout
	// serves.
	Prior Prior
}

// Prior returns a watch's reader's copy of key at revision rev, nil when
// it holds none (see WatchOptions.Prior).
type Prior func(key string, rev uint64) *object.Object

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
// have been compacted fails with ErrGone, from one the store has not
// reached with ErrFutureRevision. A watch survives the loss of its
// delivery (see read); it ends with a Failed event only when it cannot go
// on, for instance when it fell behind a compaction while disconnected.
// Shared watches that resume share one read of the store (see fanout).
func (s *Store) Watch(ctx context.Context, opts WatchOptions) (<-chan Event, error) {
	last, err := s.conn.lastSeq(ctx, s.stream())
	if err != nil {
		return nil, fmt.Errorf("bus: watch %s: %w", s.spec.Resource, err)
	}
	if opts.AfterRevision > last {
		return nil, fmt.Errorf("%w: %s resourceVersion %d is ahead of the latest revision %d",
			ErrFutureRevision, s.spec.Resource, opts.AfterRevision, last)
	}
	if err := s.checkNotCompacted(ctx, opts.AfterRevision); err != nil {
		return nil, err
	}
	var ended func()
	if opts.Shared && !opts.Raw {
		ended = s.shared.join(opts.Serving)
	}
	if opts.Shared && opts.AfterRevision > 0 && !opts.skipsAny() && !opts.Raw {
		if f, next := s.joinFanout(opts.AfterRevision); f != nil {
			return f.watch(ctx, opts, next, last, ended), nil
		}
	}
	decode := func(m rawMsg, live bool) Event { return s.toEvent(m, live, opts.Prior) }
	switch {
	case opts.Raw:
		decode = s.rawEvent
	case opts.Shared:
		decode = func(m rawMsg, live bool) Event { return s.sharedEvent(m, live, opts.Prior) }
	}
	if opts.skipsAny() {
		full := decode
		decode = func(m rawMsg, live bool) Event {
			if live && opts.skips(m) {
				return Event{}
			}
			return full(m, live)
		}
	}
	// Outermost: a confirmation reaches none of the others.
	decode = s.withProgress(decode, opts.Progress)
	spec := s.watchSpec(opts)
	spec.ended = ended
	return s.conn.watch(ctx, spec, opts.Buffer, opts.AfterRevision == 0, decode), nil
}

func (opts WatchOptions) skipsAny() bool { return opts.SkipStatus || opts.SkipCreate != nil }

// skips reports a change made after Synced that opts leaves out undecoded.
func (opts WatchOptions) skips(m rawMsg) bool {
	switch m.header.Get(HeaderOp) {
	case opStatus:
		return opts.SkipStatus
	case opCreate:
		return opts.SkipCreate != nil && !isTombstone(m.header) && opts.SkipCreate(m.data, layoutIn(m.header))
	}
	return false
}

// watchSpec is the read of a watch after opts.AfterRevision (from the
// start when 0) of opts.Namespace or opts.Key.
func (s *Store) watchSpec(opts WatchOptions) readSpec {
	spec := readSpec{stream: s.stream(), filter: s.filter(opts.Namespace, opts.Key), what: "watch " + s.spec.Resource,
		check: func(ctx context.Context, next uint64) error { return s.checkNotCompacted(ctx, next-1) }}
	spec.filter = s.readFilter(spec.filter)
	if opts.AfterRevision > 0 {
		spec.start = opts.AfterRevision + 1
	}
	return spec
}

// watch runs a read on its own goroutine and hands its messages, decoded,
// to a channel, with Synced once it has caught up. When initial, what
// comes before Synced is the current state (all Added, deleted keys
// left out). Until Synced it holds one of the connection's read turns.
func (c *Conn) watch(ctx context.Context, spec readSpec, buffer int, initial bool, decode func(rawMsg, bool) Event) <-chan Event {
	if buffer == 0 {
		buffer = 256
	}
	ch := make(chan Event, buffer)
	send := func(ev Event) error {
		select {
		case ch <- ev:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	synced := false
	last := max(spec.start, 1) - 1 // the revision the watch has reached
	go func() {
		defer close(ch)
		if spec.ended != nil {
			defer spec.ended()
		}
		release, err := c.turns.take(ctx)
		if err != nil {
			return
		}
		defer release()
		err = c.read(ctx, spec, func(m rawMsg) error {
			if m.seq > 0 {
				last = m.seq
				live := synced || !initial
				ev := decode(m, live)
				if ev.Type != "" && (live || ev.Type != Deleted) {
					if err := send(ev); err != nil {
						return err
					}
				}
			}
			if !synced && m.caughtUp {
				synced = true
				err := send(Event{Type: Synced, Revision: last})
				release()
				return err
			}
			return nil
		})
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			_ = send(Event{Type: Failed, Err: err})
		}
	}()
	return ch
}

// withProgress passes a confirmation, which a watch of every key reads
// (see confirm.go), on as Progress once live when progress (before, it
// only moves the revision Synced gives), and every other message to
// decode.
func (s *Store) withProgress(decode func(rawMsg, bool) Event, progress bool) func(rawMsg, bool) Event {
	return func(m rawMsg, live bool) Event {
		if !s.isConfirmation(m) {
			return decode(m, live)
		}
		if live && progress {
			return Event{Type: Progress, Revision: m.seq}
		}
		return Event{}
	}
}

// toEvent classifies one stored message. Before sync, every value is Added.
func (s *Store) toEvent(m rawMsg, live bool, prior Prior) Event {
	ev := s.rawEvent(m, live)
	data := ev.Raw
	ev.Raw = nil
	if ev.Type == Deleted {
		// A delete's last state, when it carries one, is told if it
		// decodes; the delete stands either way.
		if len(data) > 0 {
			if o, err := s.decode(ev.Key, data, m.seq, ev.Layout); err == nil {
				ev.Object = o
			}
		}
		return ev
	}
	o, err := s.decodeOver(ev.Key, data, m.seq, ev.Layout, m.header, prior)
	if err != nil {
		ev.Type, ev.Err = Corrupt, err
		return ev
	}
	ev.Object = o
	return ev
}

// rawEvent classifies one stored message and leaves its value undecoded.
// A bare fence deletes nothing a watcher has seen: it carries no value,
// so that clients pass over it.
func (s *Store) rawEvent(m rawMsg, live bool) Event {
	ev := Event{Key: m.subject[len(s.subjPrefix):], Revision: m.seq, Time: m.time, Trace: extractSpan(m.header), StatusBy: statusBy(m, live),
		Layout: layoutIn(m.header)}
	switch {
	case !isTombstone(m.header):
		ev.Type, ev.Raw = eventType(m, live), m.data
	case len(m.data) > 0 && m.header.Get(HeaderOp) != opFence:
		ev.Type, ev.Raw = Deleted, m.data
	default:
		ev.Type = Deleted
	}
	return ev
}

// statusBy is the author of a write of the status alone read live. What
// a watch from the start reads before Synced is the state its reader has
// not seen yet, whoever wrote it.
func statusBy(m rawMsg, live bool) string {
	if !live || m.header == nil || m.header.Get(HeaderOp) != opStatus {
		return ""
	}
	return m.header.Get(headerBy)
}

// eventType is the type of a message that holds a value: before sync,
// every value is Added.
func eventType(m rawMsg, live bool) EventType {
	if !live || m.header.Get(HeaderOp) == opCreate {
		return Added
	}
	return Modified
}
