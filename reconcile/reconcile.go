// Package reconcile is the runtime every Homeostat service builds on, above
// the bus and below the services: informers (caches of a kind kept by one
// watch each), durable work queues with stateless workers that call a
// Reconciler to close the gap between spec and status, retry records, and
// the Events recorder.
//
// The contract: a Reconciler is level-triggered and safe to repeat. It may
// run for the same key in two processes at once (see the queue notes in
// package bus), so every write it makes must be compare-and-swap and every
// child it creates must have a deterministic name. In return the runtime
// gives it informer caches that are never older than the write that
// triggered the reconcile, per-key exponential backoff with no worker state,
// redelivery when a worker dies, periodic resync, a span per reconcile that
// continues the trace of the triggering write, retry state visible per
// object, and Prometheus metrics.
package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// Request names the object to reconcile.
type Request struct {
	Key       string
	Namespace string
	Name      string
}

// Result tells the runtime what to do after a successful reconcile.
type Result struct {
	// RequeueAfter > 0 reconciles the key again after this long.
	RequeueAfter time.Duration
}

// Reconciler closes the gap for one key.
type Reconciler interface {
	Reconcile(ctx context.Context, req Request) (Result, error)
}

// Func adapts a function to Reconciler.
type Func func(ctx context.Context, req Request) (Result, error)

// Reconcile calls f.
func (f Func) Reconcile(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }

type terminalError struct{ err error }

func (e terminalError) Error() string { return e.err.Error() }
func (e terminalError) Unwrap() error { return e.err }

// Terminal marks an error that retrying cannot fix: the key is not retried
// until it changes.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return terminalError{err}
}

// IsTerminal reports whether err was marked Terminal.
func IsTerminal(err error) bool {
	var t terminalError
	return errors.As(err, &t)
}

// Kind says which resource a kind is and how its keys are shaped.
type Kind struct {
	Kind       string
	APIVersion string
	// Resource is plural.group ("replicasets.apps"), or plural for the
	// core group.
	Resource   string
	Namespaced bool
	TTL        time.Duration
}

// KindOf describes a served resource.
func KindOf(res *schemas.Resource) Kind {
	if res.StoredAs != nil {
		return KindOf(res.StoredAs) // one store, two shapes
	}
	return Kind{Kind: res.Kind, APIVersion: res.APIVersion(), Resource: res.GroupResource(), Namespaced: res.Namespaced, TTL: res.TTL}
}

// StoreSpec is the bus's description of the kind's store.
func (k Kind) StoreSpec() bus.StoreSpec {
	return bus.StoreSpec{Resource: k.Resource, Kind: k.Kind, Namespaced: k.Namespaced, TTL: k.TTL}
}

// RequestFor builds the request for a key of kind k.
func RequestFor(k Kind, key string) Request {
	if k.Resource == "" {
		return Request{Key: key}
	}
	ns, name := object.SplitKey(key, k.Namespaced)
	return Request{Key: key, Namespace: ns, Name: name}
}
