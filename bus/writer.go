package bus

import (
	"context"
	"sync/atomic"

	"github.com/homeostat/homeostat/object"
)

// FieldTracker records which manager wrote which fields of an object, in
// its metadata.managedFields, as server-side apply reads them.
type FieldTracker interface {
	// Track returns next with its managed fields updated for a write by
	// manager that replaces live (nil for a create), through subresource
	// ("status" for a write that changes the status alone, which the
	// status subresource would take; "" otherwise). It never fails: a
	// write it cannot type keeps the managed fields it had.
	Track(manager, subresource string, live, next *object.Object) *object.Object
}

// Writer names who writes through a context: the controllers or a node
// agent, each under a field manager of its own (what
// kube-controller-manager and the kubelet are in Kubernetes), so that an
// apply conflicting with a field they set names them. The API records its
// clients' writes itself and names no writer; the scheduler's bindings
// are recorded by no one, as Kubernetes records none for a binding.
type Writer struct {
	Manager string
	Fields  FieldTracker
}

// AgentManager is the field manager of a node agent's writes of its Node
// and its Lease (the kubelet's in Kubernetes). Its writes of pods' status,
// one or more for every pod that starts, are not tracked: tracking them
// would make a pod's way to Running half again as long on two cores, and
// no apply conflicts with them (an apply of a pod leaves its status be).
const AgentManager = "homeostat-agent"

type writerKey struct{}

// WithWriter returns ctx whose writes through the bus's stores are
// recorded under w: a service sets it once, on the context it runs with.
// A Writer with no Manager records nothing.
func WithWriter(ctx context.Context, w Writer) context.Context {
	return context.WithValue(ctx, writerKey{}, w)
}

// track records a write of next over live (nil for a create) through
// subresource under the writer ctx names, if any.
func track(ctx context.Context, subresource string, live, next *object.Object) *object.Object {
	w, ok := ctx.Value(writerKey{}).(Writer)
	if !ok || w.Fields == nil || w.Manager == "" {
		return next
	}
	return w.Fields.Track(w.Manager, subresource, live, next)
}

type authorKey struct{}

// Author marks the writes of one object's status alone made through a
// context, so that whoever makes them can tell them from others' when
// they come back through a watch (Event.StatusBy). The reconcile runtime
// makes one for each pass: named for the pass's controller and process,
// for the object the pass reconciles.
type Author struct {
	name, resource, key string
	wrote               atomic.Uint64
}

// NewAuthor returns an Author that marks the status writes of resource's
// object key as by name.
func NewAuthor(name, resource, key string) *Author {
	return &Author{name: name, resource: resource, key: key}
}

// Wrote is the revision of the last write it marked, in its resource's
// store; 0 for none.
func (a *Author) Wrote() uint64 { return a.wrote.Load() }

func (a *Author) noteWrote(rev uint64) {
	for {
		cur := a.wrote.Load()
		if rev <= cur || a.wrote.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// WithAuthor returns ctx whose writes of a's object's status alone a marks.
func WithAuthor(ctx context.Context, a *Author) context.Context {
	return context.WithValue(ctx, authorKey{}, a)
}

// authorOf is the author that marks a status write of resource's key
// through ctx, if any.
func authorOf(ctx context.Context, resource, key string) *Author {
	a, _ := ctx.Value(authorKey{}).(*Author)
	if a == nil || a.key != key || a.resource != resource {
		return nil
	}
	return a
}
