package api

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// objectStore is what the handlers need of a resource's store: the bus's
// Store, or a shapeStore serving its objects in another shape.
type objectStore interface {
	Get(ctx context.Context, key string) (*object.Object, error)
	GetConfirmed(ctx context.Context, key string) (*object.Object, error)
	Raw(ctx context.Context, key string) ([]byte, uint64, error)
	List(ctx context.Context, opts bus.ListOptions) (*bus.ListResult, error)
	Watch(ctx context.Context, opts bus.WatchOptions) (<-chan bus.Event, error)
	Create(ctx context.Context, o *object.Object) (*object.Object, error)
	Update(ctx context.Context, o *object.Object, opts bus.UpdateOptions) (*object.Object, error)
	Delete(ctx context.Context, key string, opts bus.DeleteOptions) (*object.Object, bool, error)
	LastWriteTrace(ctx context.Context, key string) (trace.SpanContext, error)
}

// storeOf is the store requests for res go to.
func storeOf(res *schemas.Resource, st *bus.Store) objectStore {
	if res.StoredAs != nil && res.Group == "events.k8s.io" {
		return shapeStore{st: st, out: kinds.EventToV1, in: kinds.EventFromV1}
	}
	return st
}

// shapeStore serves a store's objects in another shape (events.k8s.io/v1
// Events from the core/v1 ones): out on the way to the client, in on the
// way to the store.
type shapeStore struct {
	st      *bus.Store
	out, in func(*object.Object) *object.Object
}

func (s shapeStore) Get(ctx context.Context, key string) (*object.Object, error) {
	o, err := s.st.Get(ctx, key)
	return s.out(o), err
}

func (s shapeStore) GetConfirmed(ctx context.Context, key string) (*object.Object, error) {
	o, err := s.st.GetConfirmed(ctx, key)
	return s.out(o), err
}

func (s shapeStore) Raw(ctx context.Context, key string) ([]byte, uint64, error) {
	return s.st.Raw(ctx, key)
}

func (s shapeStore) LastWriteTrace(ctx context.Context, key string) (trace.SpanContext, error) {
	return s.st.LastWriteTrace(ctx, key)
}

func (s shapeStore) List(ctx context.Context, opts bus.ListOptions) (*bus.ListResult, error) {
	l, err := s.st.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i, o := range l.Items {
		l.Items[i] = s.out(o)
	}
	// The store's JSON of each item is of the stored shape, not this one.
	l.JSON = nil
	return l, nil
}

// Watch converts each event's object; the converting goroutine ends when
// the store's watch does, which ends with ctx.
func (s shapeStore) Watch(ctx context.Context, opts bus.WatchOptions) (<-chan bus.Event, error) {
	in, err := s.st.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan bus.Event)
	go func() {
		defer close(out)
		for ev := range in {
			ev.Object = s.out(ev.Object)
			select {
			case out <- ev:
			case <-ctx.Done():
				for range in { // let the store's watch end
				}
				return
			}
		}
	}()
	return out, nil
}

func (s shapeStore) Create(ctx context.Context, o *object.Object) (*object.Object, error) {
	created, err := s.st.Create(ctx, s.in(o))
	return s.out(created), err
}

func (s shapeStore) Update(ctx context.Context, o *object.Object, opts bus.UpdateOptions) (*object.Object, error) {
	opts.Current = s.in(opts.Current)
	updated, err := s.st.Update(ctx, s.in(o), opts)
	return s.out(updated), err
}

func (s shapeStore) Delete(ctx context.Context, key string, opts bus.DeleteOptions) (*object.Object, bool, error) {
	o, gone, err := s.st.Delete(ctx, key, opts)
	return s.out(o), gone, err
}
