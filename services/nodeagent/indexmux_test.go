package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// indexPod is a pod bound to node ("" for none).
func indexPod(name, node string) *object.Object {
	o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: name, Namespace: "default"}}
	if node != "" {
		o.Spec = json.RawMessage(`{"nodeName":` + strconv.Quote(node) + `}`)
	}
	return o
}

// collect gathers what a node's watch sends, in the order sent.
func collect(ch <-chan bus.Event) func() []string {
	var mu sync.Mutex
	var got []string
	go func() {
		for ev := range ch {
			mu.Lock()
			got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Key))
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestSharedIndexServesEachNodeItsPods: one watch of every pod gives each
// node the pods bound to it (the current set, Synced, then what changes
// in what its agent acts on, and their leaving), and a node that starts
// watching late gets the set as it stands.
func TestSharedIndexServesEachNodeItsPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := bustest.Conn(t)
	pods, err := conn.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]*object.Object{}
	create := func(name, node string) {
		t.Helper()
		o, err := pods.Create(ctx, indexPod(name, node))
		if err != nil {
			t.Fatal(err)
		}
		stored[name] = o
	}
	update := func(name string, change func(o *object.Object)) {
		t.Helper()
		o := stored[name].Clone()
		change(o)
		o, err := pods.Update(ctx, o, bus.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored[name] = o
	}
	create("a", "n.1")
	create("b", "n2")
	create("u", "")
	x := newSharedIndex()
	done := make(chan struct{})
	go func() { defer close(done); x.run(ctx, pods) }()
	ch1, _ := x.Watch(ctx, "n.1")
	got1 := collect(ch1)
	poll.Until(t, "n.1's set and Synced", 10*time.Second, func() bool {
		return fmt.Sprint(got1()) == "[ADDED default.a SYNCED ]"
	})
	create("c", "n.1")
	create("d", "n2")
	update("a", func(o *object.Object) { o.Status = json.RawMessage(`{"phase":"Running"}`) }) // not the agent's business
	update("u", func(o *object.Object) { o.Spec = indexPod("u", "n.1").Spec })
	update("b", func(o *object.Object) { o.Spec = indexPod("b", "n.1").Spec }) // moves to n.1
	if _, _, err := pods.Delete(ctx, "default.a", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "n.1's changes, and none of n2's", 10*time.Second, func() bool {
		return fmt.Sprint(got1()) == "[ADDED default.a SYNCED  ADDED default.c MODIFIED default.u MODIFIED default.b DELETED default.a]"
	})
	wctx, stop := context.WithCancel(ctx)
	ch2, _ := x.Watch(wctx, "n2")
	// The set is sent as the pods' last events were: object, revision.
	select {
	case ev := <-ch2:
		d := stored["d"]
		if ev.Type != bus.Added || ev.Key != "default.d" || ev.Object == nil || ev.Object.Metadata.UID != d.Metadata.UID ||
			fmt.Sprint(ev.Revision) != d.Metadata.ResourceVersion {
			t.Fatalf("n2's set began with %s %s at %d (object %v), want d as created at %s",
				ev.Type, ev.Key, ev.Revision, ev.Object != nil, d.Metadata.ResourceVersion)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("n2's set was not sent")
	}
	got2 := collect(ch2)
	poll.Until(t, "n2's set as it stands, then Synced", 10*time.Second, func() bool {
		g := got2()
		return fmt.Sprint(g) == "[SYNCED ]"
	})
	stop()
	poll.Until(t, "n2's watch closed when its context ended", 10*time.Second, func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		_, ok := x.subs["n2"]
		return !ok
	})
	cancel()
	<-done
}

// watchCounter is a context that never ends and counts the functions
// registered to run when it does and not yet let go: context.AfterFunc
// uses its method, as the context is none of the package's own.
type watchCounter struct {
	done chan struct{}
	mu   sync.Mutex
	live int
}

func (c *watchCounter) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *watchCounter) Done() <-chan struct{}       { return c.done }
func (c *watchCounter) Err() error                  { return nil }
func (c *watchCounter) Value(any) any               { return nil }

func (c *watchCounter) AfterFunc(func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live++
	var once sync.Once
	return func() bool {
		stopped := false
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.live--
			stopped = true
		})
		return stopped
	}
}

// TestSharedIndexForgetsEndedWatches: a node's watch that ends before its
// context (the shared watch started over, or the node watched again)
// lets go of that context, so a long-lived node's watches do not pile up.
func TestSharedIndexForgetsEndedWatches(t *testing.T) {
	x := newSharedIndex()
	ctx := &watchCounter{done: make(chan struct{})}
	for range 3 {
		if _, err := x.Watch(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		x.reset()
	}
	for range 3 {
		if _, err := x.Watch(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
	}
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	if ctx.live != 1 {
		t.Fatalf("%d watches hold the node's context, want the 1 still open", ctx.live)
	}
}

// TestUnbound: a pod's create is left out of the nodes' index only when
// its JSON says, alone, that no node runs it.
func TestUnbound(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        bool
	}{
		{"no node", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}}`, true},
		{"an empty node", `{"spec":{"nodeName":""}}`, true},
		{"bound", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}],"nodeName":"n1"}}`, false},
		{"bound, named twice", `{"spec":{"nodeName":"","nodeName":"n1"}}`, false},
		{"a node elsewhere than the spec", `{"metadata":{"nodeName":"n1"},"status":{"nodeName":"n1"},"spec":{}}`, true},
		{"not JSON", `{"spec":`, false},
		{"null, which the index passes over either way", `null`, true},
		{"a spec of another form", `{"spec":[]}`, false},
	} {
		if got := unbound([]byte(tc.value), object.Layout{}); got != tc.want {
			t.Errorf("%s: unbound %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Where the writer's layout places the spec, unbound reads the spec alone
// and answers as it does reading the pod whole.
func TestUnboundByLayout(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       bool
	}{
		{"no node", `{"containers":[{"name":"c"}]}`, true},
		{"no spec", ``, true},
		{"an empty node", `{"containers":[],"nodeName":""}`, true},
		{"bound", `{"containers":[{"name":"c"}],"nodeName":"n1"}`, false},
		{"bound, named twice", `{"nodeName":"","nodeName":"n1"}`, false},
		{"bound, its name escaped", `{"node\u004eame":"n1"}`, false},
		{"a container named so", `{"containers":[{"name":"nodeName"}]}`, true},
		{"a spec of another form", `[]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "p", Namespace: "default"}}
			if tc.spec != "" {
				o.Spec = []byte(tc.spec)
			}
			data, l, err := object.EncodeLayout(o)
			if err != nil {
				t.Fatal(err)
			}
			if l == (object.Layout{}) {
				t.Fatalf("%s has no layout", data)
			}
			if whole := unbound(data, object.Layout{}); whole != tc.want {
				t.Fatalf("read whole, %s is unbound: %v, want %v", data, whole, tc.want)
			}
			if got := unbound(data, l); got != tc.want {
				t.Fatalf("read by its layout, %s is unbound: %v, want %v", data, got, tc.want)
			}
		})
	}
}
