package bus_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// pagedObjects is how many objects the paging benchmarks page through,
// 500 at a time as kubectl and client-go do.
const pagedObjects = 20000

// pagedStore is a store holding pagedObjects small objects in one
// namespace.
func pagedStore(b *testing.B) *bus.Store {
	ctx := context.Background()
	s := newStore(b, bustest.Conn(b))
	var objs []*object.Object
	for i := range pagedObjects {
		objs = append(objs, widget("default", fmt.Sprintf("w%06d", i), `{"v":1}`, map[string]string{"app": "bench"}))
	}
	for i := 0; i < len(objs); i += 500 {
		if _, errs := s.CreateMany(ctx, objs[i:min(i+500, len(objs))], bus.CreateOptions{}); errs != nil {
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return s
}

// pageThrough lists every object in pages of 500 with list, failing
// unless it gets each once.
func pageThrough(b *testing.B, list func(bus.ListOptions) (*bus.ListResult, error)) {
	opts := bus.ListOptions{Namespace: "default", Limit: 500, Shared: true}
	n := 0
	for {
		res, err := list(opts)
		if err != nil {
			b.Fatal(err)
		}
		n += len(res.Items)
		if res.Continue == "" {
			break
		}
		opts.Continue = res.Continue
	}
	if n != pagedObjects {
		b.Fatalf("paged through %d objects, want %d", n, pagedObjects)
	}
}

// Every page of a namespace read from the store, as the API reads them
// when it holds no cache of the kind.
func BenchmarkPagedListFromStore(b *testing.B) {
	ctx := context.Background()
	s := pagedStore(b)
	for b.Loop() {
		pageThrough(b, func(o bus.ListOptions) (*bus.ListResult, error) { return s.List(ctx, o) })
	}
}

// Every page of a namespace from objects held in memory, as the API
// pages its list cache.
func BenchmarkPagedListFromMemory(b *testing.B) {
	ctx := context.Background()
	s := pagedStore(b)
	all, err := s.List(ctx, bus.ListOptions{Shared: true})
	if err != nil {
		b.Fatal(err)
	}
	items := map[string]*object.Object{}
	for _, o := range all.Items {
		items[o.Key()] = o
	}
	for b.Loop() {
		pageThrough(b, func(o bus.ListOptions) (*bus.ListResult, error) { return s.PageOf(items, all.Revision, o) })
	}
}
