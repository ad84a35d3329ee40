package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/object"
)

// Change is one event an informer hands its handlers. Old is nil for adds;
// New is nil for deletes (Old then holds the last state).
type Change struct {
	Old, New *object.Object
	// OldValue and NewValue are the decoded forms, when the informer has a
	// decoder (see SetDecoder).
	OldValue, NewValue any
	Revision           uint64
	// Trace is the trace context of the write.
	Trace trace.SpanContext
	// StatusBy names the author of a change of the status alone (a
	// controller and its process), when the write's context held one
	// (bus.Event.StatusBy).
	StatusBy string
}

// Object is the object after the change, or the last state for a delete.
func (c Change) Object() *object.Object {
	if c.New != nil {
		return c.New
	}
	return c.Old
}

// IndexFunc returns the index values of an object.
type IndexFunc func(*object.Object) []string

// ValueIndexFunc returns the index values of an object from its decoded
// form too (nil when the informer has no decoder or it failed), for an
// index over what the decoder has read already.
type ValueIndexFunc func(o *object.Object, value any) []string

// Informer is a cache of one kind, kept by a single watch that lists and
// then follows every change. Objects it returns are shared: callers must
// Clone before changing one.
type Informer struct {
	kind  Kind
	store *bus.Store
	log   *slog.Logger

	mu sync.RWMutex
	// items is each key's cached object and decoded form, kept in one
	// entry that a change updates in place: an index's sets hold the
	// entries, so that reading them needs no lookup by key (a
	// ReplicaSet's pass over 100,000 pods spent a tenth of the
	// controllers' CPU on such lookups).
	items  map[string]*entry
	decode Decoder
	keep   Keep
	// serving: the cache's objects are served as JSON (bus.WatchOptions.Serving).
	serving bool
	rev     uint64
	// delivered is the revision of the last message the watch delivered:
	// rev may be ahead of it, moved to the stream's last sequence when the
	// watch said it had caught up.
	delivered uint64
	synced    bool
	indexers  map[string]ValueIndexFunc
	indexes   map[string]map[string]map[string]*entry
	handlers  []func(Change)
	revMoved  chan struct{} // closed and replaced whenever rev moves
	// onCorrupt hears of keys whose stored value is not a valid object.
	onCorrupt func(ctx context.Context, k Kind, key string, err error)
	corrupt   map[string]bool
}

// entry is a key's cached object and its decoded form (nil without a
// decoder, or when it failed).
type entry struct {
	obj   *object.Object
	value any
}

// NewInformer makes an informer outside a Manager, for a kind learned at
// run time (a custom kind); its owner runs it with Run.
func NewInformer(kind Kind, store *bus.Store, log *slog.Logger) *Informer {
	return newInformer(kind, store, log)
}

// Run keeps the cache of an informer made with NewInformer until ctx ends.
func (i *Informer) Run(ctx context.Context) { i.run(ctx) }

func newInformer(kind Kind, store *bus.Store, log *slog.Logger) *Informer {
	return &Informer{
		kind: kind, store: store, log: log,
		items: map[string]*entry{}, indexers: map[string]ValueIndexFunc{},
		indexes: map[string]map[string]map[string]*entry{}, revMoved: make(chan struct{}), corrupt: map[string]bool{},
	}
}

// OnCorrupt registers what to do when a key holds a value that is not a
// valid object (the informer leaves the key out of its cache either way);
// call before the informer runs.
func (i *Informer) OnCorrupt(fn func(ctx context.Context, k Kind, key string, err error)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.onCorrupt = fn
}

// Kind is the informer's kind.
func (i *Informer) Kind() Kind { return i.kind }

// Store is the kind's object store, for writes and live reads.
func (i *Informer) Store() *bus.Store { return i.store }

// AddIndex registers an index; call before the manager runs.
func (i *Informer) AddIndex(name string, fn IndexFunc) {
	i.AddValueIndex(name, func(o *object.Object, _ any) []string { return fn(o) })
}

// AddValueIndex registers an index computed with each object's decoded
// form; call before the manager runs.
func (i *Informer) AddValueIndex(name string, fn ValueIndexFunc) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.indexers[name]; ok {
		return
	}
	i.indexers[name] = fn
	i.indexes[name] = map[string]map[string]*entry{}
	for k, e := range i.items {
		i.indexAdd(name, k, e, fn(e.obj, e.value))
	}
}

// A Decoder makes the form an informer keeps of o (say, *kinds.Pod). old
// and oldValue are the key's previous object and form, nil for a new key:
// a decoder may reuse the parts of oldValue that o has as old had them,
// since no one changes a form once made.
type Decoder func(o, old *object.Object, oldValue any) any

// DecodeEach is a Decoder that decodes every version afresh with fn.
func DecodeEach(fn func(*object.Object) any) Decoder {
	return func(o, _ *object.Object, _ any) any { return fn(o) }
}

// SetDecoder makes the informer keep a decoded form of each object,
// computed once per change instead of once per reader; call before the
// manager runs.
func (i *Informer) SetDecoder(fn Decoder) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.decode = fn
}

// A Keep makes what an informer keeps of o: o itself, or a lighter copy
// holding what its readers read (see kinds.PhaseOnly). value is o's
// decoded form (nil without a decoder, and for a delete), made from o
// whole; a Keep that keeps a copy makes value refer to the copy, not to
// o, changing it if need be: no one has seen it yet.
type Keep func(o *object.Object, value any) *object.Object

// SetKeep makes the informer keep, of each object, what fn returns. Get,
// List, its indexes and its handlers see what fn kept, which must never
// be written back over the stored object: a writer reads the stored one.
// fn must leave the metadata as it is: later revisions whose writers left
// the head alone are decoded over the object kept (bus.WatchOptions.Prior).
// Its decoder sees the object whole, and as old the key's previous
// object as kept. Call before the manager runs.
func (i *Informer) SetKeep(fn Keep) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keep = fn
}

// SetServing marks a cache whose objects are served as JSON, from
// bus.Store.PageOf: the store keeps them shared with the JSON encoded for
// each, even when no other reader of the process shares them. Call
// before it runs.
func (i *Informer) SetServing() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.serving = true
}

// Value returns the decoded form of key's object.
func (i *Informer) Value(key string) (any, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	e, ok := i.items[key]
	if !ok || i.decode == nil {
		return nil, false
	}
	return e.value, true
}

// ValuesByIndex returns the decoded forms of the objects whose index name has value.
func (i *Informer) ValuesByIndex(name, value string) []any {
	i.mu.RLock()
	defer i.mu.RUnlock()
	set := i.indexes[name][value]
	out := make([]any, 0, len(set))
	for _, e := range set {
		if e.value != nil {
			out = append(out, e.value)
		}
	}
	return out
}

// OnChange registers a handler, called in order on the watch goroutine: it
// must be quick (enqueue, not reconcile).
func (i *Informer) OnChange(fn func(Change)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, fn)
}

// Get returns the cached object of key.
func (i *Informer) Get(key string) (*object.Object, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	e, ok := i.items[key]
	if !ok {
		return nil, false
	}
	return e.obj, true
}

// List returns every cached object.
func (i *Informer) List() []*object.Object {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]*object.Object, 0, len(i.items))
	for _, e := range i.items {
		out = append(out, e.obj)
	}
	return out
}

// Snapshot returns a copy of the cache, by key, taken with the revision
// of the last message the watch delivered (every message up to it that
// was still its key's latest is applied), and the count of keys left out
// because their stored values are not valid objects.
func (i *Informer) Snapshot() (items map[string]*object.Object, delivered uint64, corrupt int) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	items = make(map[string]*object.Object, len(i.items))
	for k, e := range i.items {
		items[k] = e.obj
	}
	return items, i.delivered, len(i.corrupt)
}

// Keys returns every cached key.
func (i *Informer) Keys() []string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]string, 0, len(i.items))
	for k := range i.items {
		out = append(out, k)
	}
	return out
}

// ByIndex returns the objects whose index name has value.
func (i *Informer) ByIndex(name, value string) []*object.Object {
	i.mu.RLock()
	defer i.mu.RUnlock()
	set := i.indexes[name][value]
	out := make([]*object.Object, 0, len(set))
	for _, e := range set {
		out = append(out, e.obj)
	}
	return out
}

// Synced reports whether the initial list is loaded.
func (i *Informer) Synced() bool {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.synced
}

// Revision is the bucket revision the cache reflects.
func (i *Informer) Revision() uint64 {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.rev
}

// WaitForRevision waits until the cache reflects rev, ctx ends, or timeout
// passes, and reports whether it caught up.
func (i *Informer) WaitForRevision(ctx context.Context, rev uint64, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		i.mu.RLock()
		ok, moved := i.synced && i.rev >= rev, i.revMoved
		i.mu.RUnlock()
		if ok {
			return true
		}
		select {
		case <-moved:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// apply updates the cache and returns the change to hand to handlers.
// apply applies ev, one the watch delivered or (not delivered) one the
// informer makes itself; only the watch's goroutine calls it, so the
// object decodes outside the lock, where readers do not wait for it.
func (i *Informer) apply(ev bus.Event, delivered bool) (Change, bool) {
	gone := ev.Type == bus.Deleted || ev.Type == bus.Corrupt
	i.mu.RLock()
	var old *object.Object
	var oldValue any
	if e := i.items[ev.Key]; e != nil {
		old, oldValue = e.obj, e.value
	}
	decode, keep := i.decode, i.keep
	i.mu.RUnlock()
	ch := Change{Old: old, OldValue: oldValue, Revision: ev.Revision, Trace: ev.Trace, StatusBy: ev.StatusBy}
	if !gone && decode != nil {
		ch.NewValue = decode(ev.Object, old, oldValue)
	}
	if keep != nil && ev.Object != nil {
		ev.Object = keep(ev.Object, ch.NewValue) // a delete's last state too, for a key never held
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if delivered {
		i.delivered = max(i.delivered, ev.Revision)
	}
	e := i.items[ev.Key]
	if gone {
		i.reindex(ev.Key, e, old, nil, oldValue, nil)
		delete(i.items, ev.Key)
		if old == nil {
			ch.Old = ev.Object
		}
	} else {
		if e == nil {
			e = &entry{}
			i.items[ev.Key] = e
		}
		i.reindex(ev.Key, e, old, ev.Object, oldValue, ch.NewValue)
		e.obj, e.value = ev.Object, ch.NewValue
		ch.New = ev.Object
	}
	i.moveRev(ev.Revision)
	return ch, ch.Old != nil || ch.New != nil
}

// progress records that the watch has passed rev with no change to
// report: a revision confirmed since (see Store.LastRevision), which a
// WaitForRevision may be waiting for.
func (i *Informer) progress(rev uint64) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.delivered = max(i.delivered, rev)
	i.moveRev(rev)
}

func (i *Informer) moveRev(rev uint64) {
	if rev > i.rev {
		i.rev = rev
		close(i.revMoved)
		i.revMoved = make(chan struct{})
	}
}

func (i *Informer) notify(ch Change) {
	i.mu.RLock()
	hs := i.handlers
	i.mu.RUnlock()
	for _, h := range hs {
		h(ch)
	}
}

// run keeps the cache until ctx ends. Its watch survives a lost delivery
// by itself; when it cannot resume (the store compacted past it while it
// was away) the informer lists again, reporting objects that vanished in
// between as deletes.
func (i *Informer) run(ctx context.Context) {
	for ctx.Err() == nil {
		i.mu.RLock()
		after, synced := i.rev, i.synced
		i.mu.RUnlock()
		if !synced {
			after = 0
		}
		err := i.watch(ctx, after)
		if errors.Is(err, bus.ErrGone) {
			i.log.Info("informer fell behind a compaction; listing again", "kind", i.kind.Kind)
			i.mu.Lock()
			i.synced = false
			i.mu.Unlock()
			continue
		}
		if err != nil && ctx.Err() == nil {
			i.log.Warn("informer watch failed; retrying", "kind", i.kind.Kind, "err", err)
			clock.Sleep(ctx, time.Second)
		}
	}
}

// informerBuffer is how many decoded changes a watch may hold ahead of
// its informer. A channel's room is made whole at once, 248 bytes an
// event, for every kind a process caches, idle or not: 4,096 took 1 MB
// each, 8 MB in the controllers. The store's reader pulls 512 messages
// at a time, so a thousand keeps the decoding ahead.
const informerBuffer = 1024

func (i *Informer) watch(ctx context.Context, after uint64) error {
	// Unconfirmed: a confirmation costs a write, which every reader of
	// the kind receives, at each informer's start; a confirmed revision
	// a caller waits for comes to the informer as Progress.
	baseline, err := i.store.LeaderRevision(ctx)
	if err != nil {
		return err
	}
	if after > baseline {
		after = 0 // the bucket was dropped and made again: list it afresh
	}
	if after == 0 {
		// A list afresh: until it has synced, the cache is not the store's.
		i.mu.Lock()
		i.delivered, i.synced = 0, false
		i.mu.Unlock()
	}
	// Shared: the cache hands out its objects unchanged, so the informers
	// and shared readers of the kind in this process decode a change once
	// between them while two or more read.
	i.mu.RLock()
	serving := i.serving
	i.mu.RUnlock()
	ch, err := i.store.Watch(ctx, bus.WatchOptions{AfterRevision: after, Buffer: informerBuffer, Shared: true, Serving: serving, Progress: true,
		Prior: i.prior})
	if err != nil {
		return err
	}
	i.mu.RLock()
	relist := after == 0 && (len(i.items) > 0 || len(i.corrupt) > 0)
	i.mu.RUnlock()
	seen := map[string]bool{}
	for ev := range ch {
		switch ev.Type {
		case bus.Failed:
			return ev.Err
		case bus.Synced:
			if relist {
				i.dropUnseen(seen, baseline)
				relist = false
			}
			rev := syncedRevision(ev.Revision, baseline, func() (bool, error) { return i.store.Reaches(ctx, ev.Revision, baseline) })
			i.mu.Lock()
			i.synced = true
			i.moveRev(rev)
			i.mu.Unlock()
			setSynced(i.kind.Kind, true)
			continue
		case bus.Progress:
			i.progress(ev.Revision)
			continue
		case bus.Corrupt:
			i.corruptValue(ctx, ev)
		default:
			i.cleared(ev.Key)
		}
		if relist {
			seen[ev.Key] = true
		}
		if ch, ok := i.apply(ev, true); ok {
			i.notify(ch)
		}
	}
	return ctx.Err()
}

// syncedRevision is the revision an informer holds every change up to
// once its watch says Synced, having read up to read: the stream's last
// revision when the watch began (baseline), which it may not have read
// (its message replaced, or compacted), once the leader confirms that
// nothing up to it is left to read; else what it read, so that a watch
// resumed from there reads what the consumer's count of pending messages
// left out.
func syncedRevision(read, baseline uint64, reaches func() (bool, error)) uint64 {
	if read >= baseline {
		return read
	}
	if ok, err := reaches(); ok && err == nil {
		return baseline
	}
	return read
}

// corruptValue reports a key whose value cannot be read, once per key until
// it holds a valid object again or goes.
func (i *Informer) corruptValue(ctx context.Context, ev bus.Event) {
	i.mu.Lock()
	known := i.corrupt[ev.Key]
	i.corrupt[ev.Key] = true
	fn := i.onCorrupt
	i.mu.Unlock()
	corruptObjects.WithLabelValues(i.kind.Resource, ev.Key).Set(1)
	if known {
		return
	}
	i.log.Warn("stored value is not a valid object; leaving it out", "kind", i.kind.Kind, "key", ev.Key, "err", ev.Err)
	if fn != nil {
		fn(ctx, i.kind, ev.Key, ev.Err)
	}
}

func (i *Informer) cleared(key string) {
	i.mu.Lock()
	known := i.corrupt[key]
	delete(i.corrupt, key)
	i.mu.Unlock()
	if known {
		CorruptCleared(i.kind.Resource, key)
	}
}

// dropUnseen removes what a re-list did not find: deleted while unwatched
// (corrupt keys included).
func (i *Informer) dropUnseen(seen map[string]bool, rev uint64) {
	i.mu.RLock()
	var gone []string
	for k := range i.corrupt {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	i.mu.RUnlock()
	for _, k := range gone {
		i.cleared(k)
	}
	for _, k := range i.Keys() {
		if !seen[k] {
			if ch, ok := i.apply(bus.Event{Type: bus.Deleted, Key: k, Revision: rev}, false); ok {
				i.notify(ch)
			}
		}
	}
}
