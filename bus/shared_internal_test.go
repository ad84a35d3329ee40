package bus

import (
	"runtime"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// TestSharedObjectsHoldTheirObjectsWeakly: readers of one revision share
// one object while a reader holds it; once none does, the entry lets it
// go (a reader that kept less of it frees the rest), and the revision
// read again is decoded again.
func TestSharedObjectsHoldTheirObjectsWeakly(t *testing.T) {
	var c sharedObjects
	defer c.join(false)()
	defer c.join(false)()
	// The first reader's object is held within this function alone.
	d := func() *decoded {
		first := &object.Object{Metadata: object.Meta{Name: "first"}}
		d, kept := c.keep("k", 5, first)
		if kept != first {
			t.Fatal("the first reader was not given its own object")
		}
		if _, again, ok := c.lookup("k", 5); !ok || again != first {
			t.Fatal("a reader of the same revision did not find the object held")
		}
		if d2, again := c.keep("k", 5, &object.Object{}); d2 != d || again != first {
			t.Fatal("a second decode of the same revision was kept instead of the first")
		}
		if _, _, ok := c.lookup("k", 4); ok {
			t.Fatal("another revision was found")
		}
		if json := (Event{Object: first, shared: d}).JSON(); len(json) == 0 {
			t.Fatal("the event of a held object has no JSON")
		}
		return d
	}()

	poll.Until(t, "the entry let go of the object no reader holds", 10*time.Second, func() bool {
		runtime.GC()
		_, _, ok := c.lookup("k", 5)
		return !ok
	})
	c.mu.Lock()
	_, held := c.m["k"]
	c.mu.Unlock()
	if held {
		t.Fatal("the entry of an object let go stayed, with whatever JSON it held")
	}
	fresh := &object.Object{Metadata: object.Meta{Name: "fresh"}}
	if d3, again := c.keep("k", 5, fresh); d3 == d || again != fresh {
		t.Fatal("a revision read again once let go was not kept anew")
	}
	if _, again, ok := c.lookup("k", 5); !ok || again != fresh {
		t.Fatal("the object kept anew is not found")
	}
	runtime.KeepAlive(fresh)
}

// TestSharedObjectsKeepWhileShared: entries are kept while two readers
// read, or one that serves JSON, and go with the last that shares them;
// a lone reader's object is its own, with its JSON.
func TestSharedObjectsKeepWhileShared(t *testing.T) {
	var c sharedObjects
	o := &object.Object{Metadata: object.Meta{Name: "o"}}
	kept := func() bool {
		_, _, ok := c.lookup("k", 1)
		return ok
	}
	leaveFirst := c.join(false)
	if d, got := c.keep("k", 1, o); got != o || kept() || (Event{Object: o, shared: d}).JSON() == nil {
		t.Fatal("a lone reader's object was kept, or has no JSON")
	}
	leaveSecond := c.join(false)
	if c.keep("k", 1, o); !kept() {
		t.Fatal("two readers' object was not kept")
	}
	leaveSecond()
	leaveSecond() // a second call counts nothing
	if kept() {
		t.Fatal("the object outlived the last reader that shared it")
	}
	leaveServing := c.join(true)
	leaveFirst()
	if c.keep("k", 1, o); !kept() {
		t.Fatal("a lone reader that serves JSON did not keep its object")
	}
	leaveServing()
	if c.readers != 0 || c.serving != 0 || c.m != nil {
		t.Fatalf("readers %d, serving %d, entries %v after every reader left", c.readers, c.serving, c.m)
	}
	runtime.KeepAlive(o)
}
