package bus_test

// Shared watches that resume: one read of the store serves them all.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// writeMix creates n objects named tag-<i>, alternating between
// namespaces a and b, updates the first half of touch and deletes the
// rest, and returns the changes in order and the objects made. A key is
// written once here: a read that comes late sees a key's latest change
// only, so two writes of it would fold into one.
func writeMix(ctx context.Context, t *testing.T, s *bus.Store, tag string, n int, touch []*object.Object) ([]change, []*object.Object) {
	t.Helper()
	var out []change
	var made []*object.Object
	for i := range n {
		o, err := s.Create(ctx, widget([]string{"a", "b"}[i%2], fmt.Sprintf("%s-%d", tag, i), `{}`, nil))
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, o)
		out = append(out, change{bus.Added, o.Key(), rv(t, o)})
	}
	for i, o := range touch {
		if i < len(touch)/2 {
			up := o.Clone()
			up.Spec = json.RawMessage(`{"n":1}`)
			got, err := s.Update(ctx, up, bus.UpdateOptions{Current: o})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, change{bus.Modified, o.Key(), rv(t, got)})
			continue
		}
		gone, ok, err := s.Delete(ctx, o.Key(), bus.DeleteOptions{})
		if err != nil || !ok {
			t.Fatalf("delete %s: %v %v", o.Key(), ok, err)
		}
		out = append(out, change{bus.Deleted, o.Key(), rv(t, gone)})
	}
	return out, made
}

// only keeps the changes of keys that keep says yes to.
func only(cs []change, keep func(string) bool) []change {
	var out []change
	for _, c := range cs {
		if keep(c.key) {
			out = append(out, c)
		}
	}
	return out
}

// expectSynced reads a watch's first event, which must say it is synced.
func expectSynced(t *testing.T, name string, ch <-chan bus.Event) bus.Event {
	t.Helper()
	ev := nextEvent(t, ch)
	if ev.Type != bus.Synced {
		t.Fatalf("%s: got %s %s@%d (err %v), want Synced", name, ev.Type, ev.Key, ev.Revision, ev.Err)
	}
	return ev
}

// expectExactly reads want off a watch, each change with its object.
func expectExactly(t *testing.T, name string, ch <-chan bus.Event, want []change) {
	t.Helper()
	for i, c := range want {
		ev := nextEvent(t, ch)
		if got := (change{ev.Type, ev.Key, ev.Revision}); got != c {
			t.Fatalf("%s: change %d is %v (err %v), want %v", name, i, got, ev.Err, c)
		}
		if c.typ != bus.Deleted && (ev.Object == nil || rv(t, ev.Object) != c.rev) {
			t.Fatalf("%s: %v carries %+v", name, c, ev.Object)
		}
	}
}

// TestFanoutSharesOneRead: shared watches resuming after a revision hold
// one consumer between them, and each delivers exactly the changes after
// its revision in its namespace or key, in order; a watch from before the
// shared read began reads alone. The read ends with its last watcher.
func TestFanoutSharesOneRead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	early, madeEarly := writeMix(ctx, t, s, "early", 6, nil)
	start := early[len(early)-1].rev
	mid, madeMid := writeMix(ctx, t, s, "mid", 6, madeEarly[:4])
	at := mid[len(mid)-1].rev

	wctx, stop := context.WithCancel(ctx)
	watch := func(name string, opts bus.WatchOptions) <-chan bus.Event {
		t.Helper()
		opts.Shared = true
		ch, err := s.Watch(wctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	all := map[string]<-chan bus.Event{}
	for i := range 10 {
		name := fmt.Sprintf("watch %d", i)
		all[name] = watch(name, bus.WatchOptions{AfterRevision: at})
		expectSynced(t, name, all[name])
	}
	inA := watch("namespace a", bus.WatchOptions{AfterRevision: at, Namespace: "a"})
	oneKey := watch("one key", bus.WatchOptions{AfterRevision: at, Key: "b.mid-1"})
	expectSynced(t, "namespace a", inA)
	expectSynced(t, "one key", oneKey)
	poll.Until(t, "one consumer for twelve watches", 30*time.Second, func() bool {
		n, err := s.ConsumerCount(ctx)
		return err == nil && n == 1
	})
	stream := streamOf("widgets.example.com")
	poll.Until(t, "the shared read's twelve watchers counted", 30*time.Second, func() bool {
		serving, _ := bus.SharedWatchers(stream, "slow")
		return serving == 12
	})
	before := watch("from before", bus.WatchOptions{AfterRevision: start})
	expectExactly(t, "from before", before, mid)
	if ev := expectSynced(t, "from before", before); ev.Revision != at {
		t.Fatalf("from before: synced at %d, want %d", ev.Revision, at)
	}
	// Polled: a read that loses its delivery holds no consumer for a moment.
	poll.Until(t, "two consumers: the shared read's and the early watch's", 30*time.Second, func() bool {
		n, err := s.ConsumerCount(ctx)
		return err == nil && n == 2
	})

	late, _ := writeMix(ctx, t, s, "late", 6, madeMid[:4])
	for name, ch := range all {
		expectExactly(t, name, ch, late)
	}
	expectExactly(t, "namespace a", inA, only(late, func(k string) bool { return k[:2] == "a." }))
	expectExactly(t, "one key", oneKey, only(late, func(k string) bool { return k == "b.mid-1" }))
	expectExactly(t, "from before", before, late)
	stop()
	poll.Until(t, "the reads to end with their watchers", 30*time.Second, func() bool {
		n, err := s.ConsumerCount(ctx)
		serving, _ := bus.SharedWatchers(stream, "slow")
		return err == nil && n == 0 && serving == 0
	})
}

// TestFanoutWatcherLeftBehindMissesNothing: a watcher that does not read
// while more changes come than the shared read keeps goes on alone from
// where it was, missing nothing and repeating nothing, and holds up no
// one else.
func TestFanoutWatcherLeftBehindMissesNothing(t *testing.T) {
	bus.SetFanoutSize(t, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	_, aloneBefore := bus.SharedWatchers(streamOf("widgets.example.com"), "slow")
	first, made := writeMix(ctx, t, s, "first", 20, nil)
	after := first[len(first)-1].rev
	watch := func(name string) <-chan bus.Event {
		t.Helper()
		ch, err := s.Watch(ctx, bus.WatchOptions{AfterRevision: after, Shared: true, Buffer: 1})
		if err != nil {
			t.Fatal(err)
		}
		expectSynced(t, name, ch)
		return ch
	}
	quick, slow := watch("the reading watcher"), watch("the slow watcher")
	var want []change
	for round := range 5 {
		cs, _ := writeMix(ctx, t, s, fmt.Sprintf("r%d", round), 4, made[4*round:4*round+4])
		expectExactly(t, "the reading watcher", quick, cs)
		want = append(want, cs...)
	}
	expectExactly(t, "the slow watcher", slow, want)
	// The reading watcher may have fallen behind too, for a moment: it
	// reads only once each round is written.
	if _, alone := bus.SharedWatchers(streamOf("widgets.example.com"), "slow"); alone <= aloneBefore {
		t.Fatalf("homeostat_bus_shared_watchers_alone_total{reason=slow} stayed at %v", alone)
	}
	poll.Until(t, "the slow watcher to read alone", 30*time.Second, func() bool {
		n, err := s.ConsumerCount(ctx)
		return err == nil && n == 2
	})
	last, err := s.Create(ctx, widget("a", "sentinel", `{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan bus.Event{"the reading watcher": quick, "the slow watcher": slow} {
		expectExactly(t, name, ch, []change{{bus.Added, last.Key(), rv(t, last)}})
	}
}

// TestFanoutSyncsPastExpiredChanges: a watch resuming after a revision
// whose later changes have all expired is synced at once, though the
// shared read never sees the store's last revision.
func TestFanoutSyncsPastExpiredChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const resource = "notes.example.com"
	c := bustest.Conn(t)
	s, err := c.Store(ctx, bus.StoreSpec{Resource: resource, Kind: "Widget", Namespaced: true, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := writeMix(ctx, t, s, "note", 3, nil)
	js := rawJetStream(t, c)
	poll.Until(t, "the notes to expire", 30*time.Second, func() bool {
		st, err := js.Stream(ctx, streamOf(resource))
		return err == nil && st.CachedInfo().State.Msgs == 0
	})
	ch, err := s.Watch(ctx, bus.WatchOptions{AfterRevision: cs[0].rev, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	if ev := expectSynced(t, "the watch", ch); ev.Revision != cs[2].rev {
		t.Fatalf("synced at %d, want %d", ev.Revision, cs[2].rev)
	}
	fresh, _ := writeMix(ctx, t, s, "fresh", 1, nil)
	expectExactly(t, "the watch", ch, fresh)
}
