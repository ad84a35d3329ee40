package bus

import (
	"context"

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

// WithAuthor returns ctx whose writes of a status alone are marked as
// by, so that by can tell its own write from others' when it comes
// back through a watch (Event.StatusBy): the reconcile runtime names
// each pass's controller.
func WithAuthor(ctx context.Context, by string) context.Context {
	return context.WithValue(ctx, authorKey{}, by)
}

func authorOf(ctx context.Context) string {
	by, _ := ctx.Value(authorKey{}).(string)
	return by
}
