package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// Recorder writes Events: what a controller did to an object and why. Like
// events are folded (same object, type and reason: a count and the latest
// message) and written at most once a second each, so a burst of ten
// thousand pod creations is a handful of writes. Events expire with their
// bucket's time-to-live.
type Recorder struct {
	store     *bus.Store
	component string
	log       interface{ Warn(string, ...any) }

	mu      sync.Mutex
	pending map[string]*pendingEvent
}

type pendingEvent struct {
	ns, name string
	spec     kinds.Event
	n        int32
	// owner is the controller of the object the event is about, if any:
	// like events of many of its objects are folded into one about it.
	owner *kinds.ObjectReference
}

// EventKind describes where Events live.
var EventKind = Kind{Kind: "Event", APIVersion: "v1", Resource: "events", Namespaced: true, TTL: schemas.EventTTL}

// NewRecorder returns a recorder that signs events with component, for a
// service outside a Manager; its owner runs it with Run.
func NewRecorder(ctx context.Context, conn *bus.Conn, component string, log interface{ Warn(string, ...any) }) (*Recorder, error) {
	st, err := conn.Store(ctx, EventKind.StoreSpec())
	if err != nil {
		return nil, err
	}
	return &Recorder{store: st, component: component, log: log, pending: map[string]*pendingEvent{}}, nil
}

// Run flushes recorded events once a second until ctx ends, then once more.
func (r *Recorder) Run(ctx context.Context) {
	for clock.Sleep(ctx, time.Second) {
		r.flush(ctx)
	}
	r.flush(context.WithoutCancel(ctx))
}

// Recorder returns a recorder that signs events with component; it
// flushes while the manager runs.
func (m *Manager) Recorder(ctx context.Context, component string) (*Recorder, error) {
	r, err := NewRecorder(ctx, m.opts.Bus, component, m.log)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.recorders = append(m.recorders, r)
	m.mu.Unlock()
	return r, nil
}

// CorruptObject records a Warning on a key whose stored value is not a
// valid object of kind k, naming the key and why, and marks the key in the
// homeostat_corrupt_objects metric.
func (r *Recorder) CorruptObject(ctx context.Context, k Kind, key string, err error) {
	corruptObjects.WithLabelValues(k.Resource, key).Set(1)
	ns, name := object.SplitKey(key, k.Namespaced)
	stub := &object.Object{APIVersion: k.APIVersion, Kind: k.Kind, Metadata: object.Meta{Name: name, Namespace: ns}}
	r.Event(ctx, stub, kinds.EventWarning, "CorruptObject",
		"the stored value of %s %s cannot be read (%v); it is left out of lists and caches until it is replaced or deleted", k.Kind, key, err)
}

// eventName is the name and namespace of the events of one type and
// reason about an object: <object>.<hash>, as client-go names events, so
// that the events of one object are read without the others'
// (bus.ListOptions.Under).
func eventName(ref kinds.ObjectReference, typ, reason string) (ns, name string) {
	// FNV-1a of "uid/kind/name/type/reason", made without fmt: a
	// scheduler names an event for every pod it binds.
	h := uint64(fnvOffset)
	for i, part := range [...]string{ref.UID, ref.Kind, ref.Name, typ, reason} {
		if i > 0 {
			h = (h ^ '/') * fnvPrime
		}
		for j := 0; j < len(part); j++ {
			h = (h ^ uint64(part[j])) * fnvPrime
		}
	}
	base := ref.Name
	if len(base) > 253-17 {
		base = strings.TrimRight(base[:253-17], ".-")
	}
	ns = ref.Namespace
	if ns == "" {
		ns = "default"
	}
	hex := strconv.FormatUint(h, 16)
	return ns, base + "." + strings.Repeat("0", 16-len(hex)) + hex
}

// The 64-bit FNV-1a offset basis and prime.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Event records that something happened to o.
func (r *Recorder) Event(ctx context.Context, o *object.Object, typ, reason, format string, args ...any) {
	ref := kinds.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Metadata.Name,
		Namespace: o.Metadata.Namespace, UID: o.Metadata.UID, ResourceVersion: o.Metadata.ResourceVersion}
	ns, name := eventName(ref, typ, reason)
	now := time.Now().UTC().Format(time.RFC3339)
	msg := fmt.Sprintf(format, args...)
	tid := ""
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		tid = sc.TraceID().String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[ns+"."+name]
	if p == nil {
		p = &pendingEvent{ns: ns, name: name, spec: kinds.Event{InvolvedObject: ref,
			Reason: reason, Type: typ, FirstTimestamp: now, Source: kinds.EventSource{Component: r.component},
		}}
		if owner, ok := o.Metadata.ControllerOf(); ok {
			p.owner = &kinds.ObjectReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name,
				Namespace: o.Metadata.Namespace, UID: owner.UID}
		}
		r.pending[ns+"."+name] = p
	}
	p.n++
	p.spec.Message, p.spec.LastTimestamp = msg, now
	if tid != "" {
		p.spec.TraceID = tid
	}
}

// aggregateAbove is how many like events about the objects of one owner
// (the Scheduled events of a ReplicaSet's pods) a flush writes one by one;
// more are one event about the owner, so that a thousand pods starting
// cost a write, not a thousand.
const aggregateAbove = 5

// aggregate folds, in a batch, the like events about many objects of one
// owner into one event about the owner.
func aggregate(batch map[string]*pendingEvent) map[string]*pendingEvent {
	type groupKey struct{ owner, kind, typ, reason string }
	groups := map[groupKey][]string{}
	for key, p := range batch {
		if p.owner != nil {
			g := groupKey{p.owner.UID, p.spec.InvolvedObject.Kind, p.spec.Type, p.spec.Reason}
			groups[g] = append(groups[g], key)
		}
	}
	for _, keys := range groups {
		if len(keys) <= aggregateAbove {
			continue
		}
		sort.Strings(keys)
		first := batch[keys[0]]
		ns, name := eventName(*first.owner, first.spec.Type, first.spec.Reason)
		agg := &pendingEvent{ns: ns, name: name, spec: first.spec}
		agg.spec.InvolvedObject = *first.owner
		var names []string
		for _, k := range keys {
			p := batch[k]
			agg.n += p.n
			if p.spec.FirstTimestamp < agg.spec.FirstTimestamp {
				agg.spec.FirstTimestamp = p.spec.FirstTimestamp
			}
			if p.spec.LastTimestamp > agg.spec.LastTimestamp {
				agg.spec.LastTimestamp, agg.spec.Message = p.spec.LastTimestamp, p.spec.Message
			}
			if len(names) < 3 {
				names = append(names, p.spec.InvolvedObject.Name)
			}
			delete(batch, k)
		}
		agg.spec.Message = fmt.Sprintf("%d %ss (%s, …), the latest: %s", len(keys), strings.ToLower(first.spec.InvolvedObject.Kind),
			strings.Join(names, ", "), agg.spec.Message)
		if prev, ok := batch[ns+"."+name]; ok { // the owner's own event of the same reason
			agg.n += prev.n
		}
		batch[ns+"."+name] = agg
	}
	return batch
}

func (r *Recorder) flush(ctx context.Context) {
	r.mu.Lock()
	batch := aggregate(r.pending)
	r.pending = map[string]*pendingEvent{}
	r.mu.Unlock()
	for key, p := range batch {
		if err := r.write(ctx, key, p); err != nil {
			r.log.Warn("recording an event", "event", key, "reason", p.spec.Reason, "err", err)
		}
	}
}

func (r *Recorder) write(ctx context.Context, key string, p *pendingEvent) error {
	// Most events are new: try the create first and save a read.
	spec := p.spec
	spec.Count = p.n
	o := &object.Object{APIVersion: "v1", Kind: "Event", Metadata: object.Meta{Name: p.name, Namespace: p.ns}}
	if err := kinds.SetEvent(o, spec); err != nil {
		return err
	}
	_, err := r.store.Create(ctx, o)
	if !errors.Is(err, bus.ErrAlreadyExists) {
		return err
	}
	for attempt := 0; attempt < 3; attempt++ {
		cur, err := r.store.Get(ctx, key)
		if errors.Is(err, bus.ErrNotFound) {
			if _, err = r.store.Create(ctx, o); errors.Is(err, bus.ErrAlreadyExists) {
				continue
			}
			return err
		}
		if err != nil {
			return err
		}
		spec, err := kinds.EventOf(cur)
		if err != nil {
			return err
		}
		spec.Count += p.n
		spec.Message, spec.LastTimestamp = p.spec.Message, p.spec.LastTimestamp
		if p.spec.TraceID != "" {
			spec.TraceID = p.spec.TraceID
		}
		n := cur.Clone()
		if err := kinds.SetEvent(n, spec); err != nil {
			return err
		}
		if _, err = r.store.Update(ctx, n, bus.UpdateOptions{Current: cur}); errors.Is(err, bus.ErrConflict) {
			continue
		}
		return err
	}
	return bus.ErrConflict
}

// CorruptCleared takes a key off the homeostat_corrupt_objects metric: its
// corrupt value was replaced or deleted.
func CorruptCleared(resource, key string) { corruptObjects.DeleteLabelValues(resource, key) }
