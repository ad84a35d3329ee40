package bus_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// priorCache is a watch's reader's copy of each key, as a Prior sees it.
type priorCache struct {
	mu    sync.Mutex
	m     map[string]*object.Object
	asked []uint64 // the revisions asked for that the cache held
}

func (c *priorCache) prior(key string, rev uint64) *object.Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.m[key]
	if o == nil || o.Metadata.ResourceVersion != strconv.FormatUint(rev, 10) {
		return nil
	}
	c.asked = append(c.asked, rev)
	return o
}

// keep holds o with its name copied: a string no decoding can hand out
// (the decoder keeps the strings it made lately and hands them out
// again), so that an object decoded over o is known by sharing it.
func (c *priorCache) keep(o *object.Object) {
	k := *o
	k.Metadata.Name = strings.Clone(o.Metadata.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[o.Key()] = &k
}

func (c *priorCache) lastAsked() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asked) == 0 {
		return 0
	}
	return c.asked[len(c.asked)-1]
}

// A change whose writer left the object's head as the revision it wrote
// over had it (a status written, a spec changed) is decoded over the
// reader's copy of that revision, sharing its metadata, and comes out as
// a watch without one decodes it; a change of the head is decoded whole.
func TestWatchDecodesOverPrior(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run("shared="+strconv.FormatBool(shared), func(t *testing.T) { testDecodesOverPrior(t, shared) })
	}
}

func testDecodesOverPrior(t *testing.T, shared bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	cache := &priorCache{m: map[string]*object.Object{}}
	over, err := s.Watch(ctx, bus.WatchOptions{Prior: cache.prior, Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := s.Watch(ctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expectSynced(t, "the watch with a prior", over)
	expectSynced(t, "the watch without", whole)

	cur, err := s.Create(ctx, widget("default", "w", `{"size":1}`, map[string]string{"app": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func(o *object.Object)
		over   bool // decoded over the revision before
	}{
		{"the status written", func(o *object.Object) { o.Status = json.RawMessage(`{"ready":1}`) }, true},
		{"the spec changed", func(o *object.Object) { o.Spec = json.RawMessage(`{"size":2}`) }, true},
		{"a label added", func(o *object.Object) { o.Metadata.Labels = map[string]string{"app": "a", "tier": "b"} }, false},
		{"the status written again", func(o *object.Object) { o.Status = json.RawMessage(`{"ready":2}`) }, true},
		{"a finalizer added", func(o *object.Object) { o.Metadata.Finalizers = []string{"example.com/f"} }, false},
		{"the spec and the status", func(o *object.Object) {
			o.Spec, o.Status = json.RawMessage(`{"size":3}`), json.RawMessage(`{"ready":3}`)
		}, true},
	}
	prev := cur
	for i, step := range steps {
		if i == 0 { // the create, which no prior precedes
			ev, plain := nextEvent(t, over), nextEvent(t, whole)
			if !reflect.DeepEqual(ev.Object, plain.Object) {
				t.Fatalf("the create: %+v, without a prior %+v", ev.Object, plain.Object)
			}
			cache.keep(ev.Object)
		}
		n := prev.Clone()
		step.change(n)
		if prev, err = s.Update(ctx, n, bus.UpdateOptions{Current: prev}); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		cache.mu.Lock()
		before := cache.m["default.w"]
		cache.mu.Unlock()
		ev, plain := nextEvent(t, over), nextEvent(t, whole)
		if ev.Revision != rv(t, prev) || plain.Revision != rv(t, prev) {
			t.Fatalf("%s: events at %d and %d, the write at %d", step.name, ev.Revision, plain.Revision, rv(t, prev))
		}
		if !reflect.DeepEqual(ev.Object, plain.Object) {
			t.Fatalf("%s: decoded over its prior\n%+v\nwhole\n%+v", step.name, ev.Object, plain.Object)
		}
		shared := unsafe.StringData(ev.Object.Metadata.Name) == unsafe.StringData(before.Metadata.Name)
		asked := cache.lastAsked() == rv(t, before)
		if shared != step.over || asked != step.over {
			t.Fatalf("%s: metadata shared with the prior %v, prior asked for its revision %v; want %v", step.name, shared, asked, step.over)
		}
		cache.keep(ev.Object)
	}
}
