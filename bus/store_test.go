package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

func newStore(t testing.TB, c *bus.Conn) *bus.Store {
	t.Helper()
	s, err := c.Store(context.Background(), bus.StoreSpec{Resource: "widgets.example.com", Kind: "Widget", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func widget(ns, name string, spec string, labels map[string]string) *object.Object {
	return &object.Object{
		APIVersion: "test/v1", Kind: "Widget",
		Metadata: object.Meta{Name: name, Namespace: ns, Labels: labels},
		Spec:     json.RawMessage(spec),
	}
}

func TestCreateGetUpdate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))

	created, err := s.Create(ctx, widget("default", "a", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if created.Metadata.UID == "" || created.Metadata.Generation != 1 || created.Metadata.CreationTimestamp.IsZero() {
		t.Fatalf("create did not fill metadata: %+v", created.Metadata)
	}
	if _, err := s.Create(ctx, widget("default", "a", `{}`, nil)); !errors.Is(err, bus.ErrAlreadyExists) {
		t.Fatalf("second create: got %v, want ErrAlreadyExists", err)
	}
	got, err := s.Get(ctx, "default.a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Fatalf("get differs from create (-create +get):\n%s", diff)
	}

	// A metadata-only change keeps the generation; a spec change moves it.
	got.Metadata.Labels = map[string]string{"x": "y"}
	got.Metadata.UID = "forged"
	up1, err := s.Update(ctx, got, bus.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if up1.Metadata.Generation != 1 || up1.Metadata.UID != created.Metadata.UID {
		t.Fatalf("label update: generation %d uid %s, want 1 and the original uid", up1.Metadata.Generation, up1.Metadata.UID)
	}
	next := up1.Clone()
	next.Spec = json.RawMessage(`{"size":2}`)
	up2, err := s.Update(ctx, next, bus.UpdateOptions{Current: up1})
	if err != nil {
		t.Fatal(err)
	}
	if up2.Metadata.Generation != 2 {
		t.Fatalf("spec update: generation %d, want 2", up2.Metadata.Generation)
	}
	// Writing from the old revision is a conflict.
	if _, err := s.Update(ctx, up1, bus.UpdateOptions{}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("stale update: got %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx, "default.missing"); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("get missing: got %v, want ErrNotFound", err)
	}
}

func TestConcurrentUpdatesOneWinner(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	base, err := s.Create(ctx, widget("default", "race", `{"n":0}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	const writers = 20
	var wg sync.WaitGroup
	errs := make([]error, writers)
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := base.Clone()
			o.Spec = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i+1))
			<-start
			_, errs[i] = s.Update(ctx, o, bus.UpdateOptions{Current: base})
		}()
	}
	close(start)
	wg.Wait()
	wins, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, bus.ErrConflict):
			conflicts++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 || conflicts != writers-1 {
		t.Fatalf("wins=%d conflicts=%d, want 1 and %d", wins, conflicts, writers-1)
	}
	final, err := s.Get(ctx, "default.race")
	if err != nil {
		t.Fatal(err)
	}
	if final.Metadata.Generation != 2 {
		t.Fatalf("generation %d after one winning spec change, want 2", final.Metadata.Generation)
	}
}

func TestDeleteWithFinalizersAndRecreate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	o := widget("default", "f", `{}`, nil)
	o.Metadata.Finalizers = []string{"test/hold"}
	created, err := s.Create(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	marked, gone, err := s.Delete(ctx, "default.f", bus.DeleteOptions{})
	if err != nil || gone || marked.Metadata.DeletionTimestamp == nil {
		t.Fatalf("delete with finalizer: gone=%v err=%v deletionTimestamp=%v", gone, err, marked.Metadata.DeletionTimestamp)
	}
	// The update that clears the last finalizer removes the object.
	marked.Metadata.Finalizers = nil
	if _, err := s.Update(ctx, marked, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "default.f"); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("after last finalizer: got %v, want ErrNotFound", err)
	}
	again, err := s.Create(ctx, widget("default", "f", `{}`, nil))
	if err != nil {
		t.Fatalf("recreate over tombstone: %v", err)
	}
	if again.Metadata.UID == created.Metadata.UID {
		t.Fatal("recreated object kept the old uid")
	}
	if _, _, err := s.Delete(ctx, "default.f", bus.DeleteOptions{UID: created.Metadata.UID}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("delete with stale uid precondition: got %v, want ErrConflict", err)
	}
	rev, _ := strconv.ParseUint(again.Metadata.ResourceVersion, 10, 64)
	if _, gone, err := s.Delete(ctx, "default.f", bus.DeleteOptions{Revision: rev}); err != nil || !gone {
		t.Fatalf("delete at revision: gone=%v err=%v", gone, err)
	}
}

func TestListSelectorAndPages(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	for i := range 7 {
		tier := "web"
		if i%2 == 1 {
			tier = "db"
		}
		ns := "a"
		if i >= 5 {
			ns = "b"
		}
		if _, err := s.Create(ctx, widget(ns, fmt.Sprintf("w%d", i), `{}`, map[string]string{"tier": tier})); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Delete(ctx, "a.w0", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sel, err := object.ParseSelector("tier=web")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.List(ctx, bus.ListOptions{Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res.Items), []string{"w2", "w4", "w6"}; !cmp.Equal(got, want) {
		t.Fatalf("tier=web: got %v, want %v", got, want)
	}
	res, err = s.List(ctx, bus.ListOptions{Namespace: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res.Items), []string{"w1", "w2", "w3", "w4"}; !cmp.Equal(got, want) {
		t.Fatalf("namespace a: got %v, want %v", got, want)
	}
	var all []string
	opts := bus.ListOptions{Limit: 2}
	for page := 0; ; page++ {
		res, err := s.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, names(res.Items)...)
		if res.Continue == "" {
			break
		}
		if page > 5 {
			t.Fatal("pagination does not end")
		}
		opts.Continue = res.Continue
	}
	if want := []string{"w1", "w2", "w3", "w4", "w5", "w6"}; !cmp.Equal(all, want) {
		t.Fatalf("pages: got %v, want %v", all, want)
	}
}

// A shared list decodes only what changed since the last one, while
// another shared reader reads: unchanged objects come back as the same
// values, changed ones anew, deleted ones not at all, each with its JSON,
// and equal labels as one map; a list that does not share gets values of
// its own. A list that is the only shared reader keeps nothing for the
// next.
func TestSharedListsDecodeOnlyChanges(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	// Two other readers: as the first list ends, another still shares.
	wctx, endWatches := context.WithCancel(ctx)
	defer endWatches()
	var watches []<-chan bus.Event
	for range 2 {
		ch, err := s.Watch(wctx, bus.WatchOptions{Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, ch)
	}
	for _, n := range []string{"w1", "w2", "w3"} {
		if _, err := s.Create(ctx, widget("a", n, `{"n":0}`, map[string]string{"app": t.Name()})); err != nil {
			t.Fatal(err)
		}
	}
	list := func(opts bus.ListOptions) map[string]*object.Object {
		t.Helper()
		res, err := s.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if opts.Shared != (res.JSON != nil) {
			t.Fatalf("shared %v but JSON %v", opts.Shared, res.JSON)
		}
		out := map[string]*object.Object{}
		for i, o := range res.Items {
			out[o.Metadata.Name] = o
			if res.JSON == nil {
				continue
			}
			var d object.Object
			if err := json.Unmarshal(res.JSON[i], &d); err != nil || d.Metadata.Name != o.Metadata.Name ||
				d.Metadata.ResourceVersion != o.Metadata.ResourceVersion || string(d.Spec) != string(o.Spec) {
				t.Fatalf("%s@%s is encoded as %s (%v)", o.Metadata.Name, o.Metadata.ResourceVersion, res.JSON[i], err)
			}
		}
		return out
	}
	first := list(bus.ListOptions{Shared: true})
	cur := first["w2"].Clone()
	cur.Spec = json.RawMessage(`{"n":1}`)
	if _, err := s.Update(ctx, cur, bus.UpdateOptions{Current: first["w2"]}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, "a.w3", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second := list(bus.ListOptions{Namespace: "a", Shared: true})
	if len(second) != 2 || second["w1"] != first["w1"] {
		t.Fatalf("unchanged w1 was decoded again, or the list is wrong: %v", second)
	}
	if second["w2"] == first["w2"] || string(second["w2"].Spec) != `{"n":1}` {
		t.Fatalf("changed w2 listed as %s", second["w2"].Spec)
	}
	if !oneMap(first["w1"].Metadata.Labels, first["w3"].Metadata.Labels) {
		t.Fatal("a shared list holds equal labels as two maps")
	}
	own := list(bus.ListOptions{})
	if own["w1"] == first["w1"] {
		t.Fatal("a list that does not share got the shared value")
	}
	if oneMap(own["w1"].Metadata.Labels, own["w2"].Metadata.Labels) || oneMap(own["w1"].Metadata.Labels, first["w1"].Metadata.Labels) {
		t.Fatal("a list that does not share got shared labels")
	}

	endWatches()
	for _, ch := range watches {
		for range ch { // until it has ended, and counted itself out
		}
	}
	alone := list(bus.ListOptions{Namespace: "a", Shared: true})
	if alone["w1"] == second["w1"] {
		t.Fatal("a shared list was given what was kept after the last other reader left")
	}
	if again := list(bus.ListOptions{Namespace: "a", Shared: true}); again["w1"] == alone["w1"] {
		t.Fatal("a shared list that read alone kept its objects for the next")
	}
}

// A cache that serves its objects as JSON (WatchOptions.Serving) keeps
// them shared while it reads alone: a page of them serves the JSON
// encoded once, where one of a watch that does not serve encodes it
// again each time.
func TestServingWatchKeepsItsJSON(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	if _, err := s.Create(ctx, widget("a", "w", `{"n":0}`, nil)); err != nil {
		t.Fatal(err)
	}
	for _, serving := range []bool{true, false} {
		wctx, end := context.WithCancel(ctx)
		ch, err := s.Watch(wctx, bus.WatchOptions{Shared: true, Serving: serving})
		if err != nil {
			t.Fatal(err)
		}
		ev := expect(t, ch, bus.Added, "w")
		expect(t, ch, bus.Synced, "")
		items := map[string]*object.Object{ev.Key: ev.Object}
		page := func() []byte {
			t.Helper()
			res, err := s.PageOf(items, ev.Revision, bus.ListOptions{Shared: true})
			if err != nil || len(res.JSON) != 1 || len(res.JSON[0]) == 0 {
				t.Fatalf("serving %v: page %v, %v", serving, res, err)
			}
			return res.JSON[0]
		}
		one, two := page(), page()
		if same := &one[0] == &two[0]; same != serving {
			t.Fatalf("serving %v: two pages served one encoding: %v", serving, same)
		}
		end()
		for range ch {
		}
	}
}

// oneMap says a and b are one map.
func oneMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Shared watches decode each change once for all of them, on every
// connection Join made to the same server, and give its JSON as served; a
// shared list then takes the watched objects as they are. A watch that
// does not share decodes for itself and has no JSON, as does one of
// another process.
func TestSharedWatchesDecodeEachChangeOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := bustest.Conn(t)
	joined, err := c.Join(ctx, bus.Config{Name: t.Name() + "-joined"})
	if err != nil {
		t.Fatal(err)
	}
	defer joined.Close()
	s := newStore(t, c)
	watch := func(s *bus.Store, shared bool) <-chan bus.Event {
		t.Helper()
		ch, err := s.Watch(ctx, bus.WatchOptions{Shared: shared})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch, bus.Synced, "")
		return ch
	}
	a, b, own := watch(s, true), watch(newStore(t, joined), true), watch(s, false)
	other := watch(newStore(t, bustest.Client(t, c)), true)
	checkJSON := func(ev bus.Event) {
		t.Helper()
		var d object.Object
		if err := json.Unmarshal(ev.JSON(), &d); err != nil || d.Metadata.Name != ev.Object.Metadata.Name ||
			d.Metadata.ResourceVersion != ev.Object.Metadata.ResourceVersion || string(d.Spec) != string(ev.Object.Spec) {
			t.Fatalf("%s@%d is encoded as %s (%v)", ev.Key, ev.Revision, ev.JSON(), err)
		}
	}
	// Each change is awaited before the next: a key keeps one message, so
	// a watch may see only the later of two quick writes.
	var last *object.Object
	for _, typ := range []bus.EventType{bus.Added, bus.Modified} {
		if typ == bus.Added {
			if _, err := s.Create(ctx, widget("a", "w", `{"n":0}`, nil)); err != nil {
				t.Fatal(err)
			}
		} else {
			cur := last.Clone()
			cur.Spec = json.RawMessage(`{"n":1}`)
			if _, err := s.Update(ctx, cur, bus.UpdateOptions{Current: last}); err != nil {
				t.Fatal(err)
			}
		}
		ea, eb, eo := expect(t, a, typ, "w"), expect(t, b, typ, "w"), expect(t, own, typ, "w")
		if ea.Object != eb.Object || ea.Revision != eb.Revision {
			t.Fatalf("%s: two shared watches decoded revision %d apart", typ, ea.Revision)
		}
		if eo.Object == ea.Object || eo.JSON() != nil {
			t.Fatalf("%s: the watch that does not share got the shared value (JSON %s)", typ, eo.JSON())
		}
		if ep := expect(t, other, typ, "w"); ep.Object == ea.Object || ep.JSON() == nil {
			t.Fatalf("%s: another process's shared watch got this one's value, or no JSON", typ)
		}
		checkJSON(ea)
		replaced := ea
		replaced.Object = ea.Object.Clone()
		if replaced.JSON() != nil {
			t.Fatalf("%s: an event whose object was replaced still gives the old JSON", typ)
		}
		last = ea.Object
	}
	res, err := s.List(ctx, bus.ListOptions{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0] != last {
		t.Fatalf("a shared list decoded the watched object again: %v", res.Items)
	}
	if _, _, err := s.Delete(ctx, "a.w", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := expect(t, a, bus.Deleted, "w"); ev.JSON() != nil {
		t.Fatalf("a delete gives JSON %s", ev.JSON())
	}
}

func names(items []*object.Object) []string {
	out := []string{}
	for _, o := range items {
		out = append(out, o.Metadata.Name)
	}
	return out
}

func TestWatchInitialThenUpdatesAndResume(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	first, err := s.Create(ctx, widget("default", "one", `{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ch, bus.Added, "one")
	expect(t, ch, bus.Synced, "")
	two, err := s.Create(ctx, widget("default", "two", `{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ch, bus.Added, "two")
	two.Metadata.Labels = map[string]string{"k": "v"}
	if _, err := s.Update(ctx, two, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, bus.Modified, "two")
	if _, _, err := s.Delete(ctx, "default.one", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := expect(t, ch, bus.Deleted, "one")
	if ev.Object == nil || ev.Object.Metadata.UID != first.Metadata.UID {
		t.Fatalf("delete event does not carry the last state: %+v", ev.Object)
	}

	// Resuming after the first create replays the rest, delete included.
	rev, _ := strconv.ParseUint(first.Metadata.ResourceVersion, 10, 64)
	resumed, err := s.Watch(ctx, bus.WatchOptions{AfterRevision: rev})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, resumed, bus.Modified, "two") // the create of two is superseded by its update
	expect(t, resumed, bus.Deleted, "one")
	expect(t, resumed, bus.Synced, "")

	// Compaction of the tombstone makes resuming from before it Gone.
	n, err := s.Compact(ctx, -time.Second)
	if err != nil || n != 1 {
		t.Fatalf("compact: removed %d, err %v; want 1 tombstone", n, err)
	}
	if _, err := s.Watch(ctx, bus.WatchOptions{AfterRevision: rev}); !errors.Is(err, bus.ErrGone) {
		t.Fatalf("resume before compaction: got %v, want ErrGone", err)
	}
	if _, err := s.Create(ctx, widget("default", "one", `{}`, nil)); err != nil {
		t.Fatalf("create after compaction: %v", err)
	}
}

func expect(t *testing.T, ch <-chan bus.Event, typ bus.EventType, name string) bus.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("watch closed, want %s %s", typ, name)
		}
		got := ""
		if ev.Object != nil {
			got = ev.Object.Metadata.Name
		}
		if ev.Type != typ || got != name {
			t.Fatalf("got %s %q (err %v), want %s %q", ev.Type, got, ev.Err, typ, name)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no event within 10s, want %s %s", typ, name)
	}
	return bus.Event{}
}

func TestRestartKeepsObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := bustest.ConnAt(t, dir)
	s := newStore(t, c)
	created, err := s.Create(ctx, widget("default", "kept", `{"a":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	s2 := newStore(t, bustest.ConnAt(t, dir))
	got, err := s2.Get(ctx, "default.kept")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Fatalf("after restart (-before +after):\n%s", diff)
	}
}

func TestIncompatibleBucketRefused(t *testing.T) {
	ctx := context.Background()
	c := bustest.Conn(t)
	if _, err := c.Store(ctx, bus.StoreSpec{Resource: "xs", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := bustest.Client(t, c).Store(ctx, bus.StoreSpec{Resource: "xs", TTL: time.Hour}); err != nil {
		t.Fatalf("same config twice: %v", err)
	}
	_, err := bustest.Client(t, c).Store(ctx, bus.StoreSpec{Resource: "xs"})
	if !errors.Is(err, bus.ErrIncompatible) {
		t.Fatalf("different ttl: got %v, want ErrIncompatible", err)
	}
}

// TestRetainChangesHowLongValuesLive: an expiring bucket opens whatever
// its time to live, which Retain changes; a bucket whose values do not
// expire cannot be made to.
func TestRetainChangesHowLongValuesLive(t *testing.T) {
	ctx := context.Background()
	c := bustest.Conn(t)
	if _, err := c.Store(ctx, bus.StoreSpec{Resource: "notes", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := bustest.Client(t, c).Store(ctx, bus.StoreSpec{Resource: "notes", TTL: 2 * time.Hour}); err != nil {
		t.Fatalf("an expiring bucket opened with another time to live: %v", err)
	}
	if err := c.Retain(ctx, "notes", 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Retention(ctx, "notes"); err != nil || got != 3*time.Hour {
		t.Fatalf("time to live %s (%v) after Retain, want 3h", got, err)
	}
	if _, err := c.Store(ctx, bus.StoreSpec{Resource: "things"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Retain(ctx, "things", time.Hour); !errors.Is(err, bus.ErrInvalid) {
		t.Fatalf("Retain of a bucket that does not expire: %v, want ErrInvalid", err)
	}
}

// TestListUnder: the objects named <name>.<suffix> (an object's events)
// are listed without the others; it needs a namespace.
func TestListUnder(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	for _, n := range []string{"web.1", "web.2", "web", "webby.1", "web.1.x"} {
		if _, err := s.Create(ctx, widget("default", n, `{}`, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, widget("other", "web.3", `{}`, nil)); err != nil {
		t.Fatal(err)
	}
	res, err := s.List(ctx, bus.ListOptions{Namespace: "default", Under: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(res.Items), " "); got != "web.1 web.2" {
		t.Fatalf("under web: %s", got)
	}
	if _, err := s.List(ctx, bus.ListOptions{Under: "web"}); !errors.Is(err, bus.ErrInvalid) {
		t.Fatalf("under a name in no namespace: %v", err)
	}
}

func TestConcurrentSetup(t *testing.T) {
	ctx := context.Background()
	srv := bustest.Conn(t)
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		c := bustest.Client(t, srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Store(ctx, bus.StoreSpec{Resource: "shared", Namespaced: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent setup: %v", err)
		}
	}
}

// TestUpdateThatChangesNothing: an update that stores what is there is not
// made (the same revision comes back), whatever the key order of its spec
// and status; any change is made, and only a change of spec moves the
// generation.
func TestUpdateThatChangesNothing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	o := widget("default", "w", `{"size":1,"color":"blue"}`, map[string]string{"a": "b"})
	o.Status = json.RawMessage(`{"ready":1,"phase":"Up"}`)
	cur, err := s.Create(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		change     func(*object.Object)
		written    bool
		generation int64
	}{
		{"nothing", func(*object.Object) {}, false, 1},
		{"spec and status in another order", func(n *object.Object) {
			n.Spec, n.Status = json.RawMessage(`{"color":"blue","size":1}`), json.RawMessage(`{"phase":"Up","ready":1}`)
		}, false, 1},
		{"a label", func(n *object.Object) { n.Metadata.Labels = map[string]string{"a": "c"} }, true, 1},
		{"the status", func(n *object.Object) { n.Status = json.RawMessage(`{"ready":2,"phase":"Up"}`) }, true, 1},
		{"the spec", func(n *object.Object) { n.Spec = json.RawMessage(`{"size":2,"color":"blue"}`) }, true, 2},
	} {
		n := cur.Clone()
		c.change(n)
		got, err := s.Update(ctx, n, bus.UpdateOptions{Current: cur})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if written := got.Metadata.ResourceVersion != cur.Metadata.ResourceVersion; written != c.written || got.Metadata.Generation != c.generation {
			t.Fatalf("%s: written %v, generation %d; want %v, %d", c.name, written, got.Metadata.Generation, c.written, c.generation)
		}
		cur = got
	}
}

// TestPagesReadOnlyTheirKeys: a limited list without a selector, whose
// page is a small share of the namespace, reads its page's keys in key
// order, passing over deleted keys: a corrupt value beyond the page is
// not reported by the page, but by the page that holds its key. Each page
// says how many keys follow it, and carries the first page's revision
// while reading afresh; the pages after the first page through the keys
// it found.
func TestPagesReadOnlyTheirKeys(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	var objs []*object.Object
	for i := range 40 {
		objs = append(objs, widget("ns", fmt.Sprintf("k%02d", i), `{}`, nil))
	}
	objs = append(objs, widget("other", "k00", `{}`, nil))
	if _, errs := s.CreateMany(ctx, objs, bus.CreateOptions{}); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	if _, _, err := s.Delete(ctx, "ns.k01", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRaw(ctx, "ns.k05", []byte("not an object")); err != nil {
		t.Fatal(err)
	}
	type page struct {
		names     []string
		corrupt   []string
		remaining int64
	}
	want := []page{
		{names: []string{"k00", "k02"}, remaining: 37}, // k01 is deleted
		{names: []string{"k03", "k04"}, remaining: 35}, // not k99, made after the first page
		{names: []string{"k06", "k07"}, corrupt: []string{"ns.k05"}, remaining: 32},
	}
	opts := bus.ListOptions{Namespace: "ns", Limit: 2}
	var first uint64
	var all []string
	for i := 0; ; i++ {
		res, err := s.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var corrupt []string
		for _, ce := range res.Corrupt {
			corrupt = append(corrupt, ce.Key)
		}
		got := page{names: names(res.Items), corrupt: corrupt, remaining: res.Remaining}
		if i < len(want) && !cmp.Equal(got, want[i], cmp.AllowUnexported(page{})) {
			t.Fatalf("page %d: got %+v, want %+v", i, got, want[i])
		}
		all = append(all, got.names...)
		if i == 0 {
			first = res.Revision
			// Created after the first page: the pages after it page
			// through the keys it found, as a Kubernetes list continued
			// at its first page's resourceVersion does.
			if _, err := s.Create(ctx, widget("ns", "k99", `{}`, nil)); err != nil {
				t.Fatal(err)
			}
		} else if res.Revision != first {
			t.Fatalf("page %d has revision %d, the first %d", i, res.Revision, first)
		}
		if res.Continue == "" {
			break
		}
		opts.Continue = res.Continue
	}
	if len(all) != 38 || all[len(all)-1] != "k39" || !sort.StringsAreSorted(all) {
		t.Fatalf("the pages listed %v, want the 38 live valid keys of 40, in order", all)
	}
}

// TestCatchUpBringsACopyToThePresent: objects that reflect the store up
// to a revision, even ones that lack a write at or below it whose key was
// written again later (a watch passes over a message replaced before it
// got there), are brought to the present by the messages after that
// revision: values replace, delete markers remove, and the revision
// returned is at least the one given. More messages than allowed, or a
// corrupt one, answer false.
func TestCatchUpBringsACopyToThePresent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	create := func(name string) *object.Object {
		t.Helper()
		o, err := s.Create(ctx, widget("ns", name, `{"v":0}`, nil))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	update := func(o *object.Object, v string) *object.Object {
		t.Helper()
		n := o.Clone()
		n.Spec = []byte(`{"v":` + v + `}`)
		u, err := s.Update(ctx, n, bus.UpdateOptions{Current: o})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	k := create("k")
	j := create("j")
	gone := create("gone")
	// A copy as a watch may hold it at j's revision: k's second write,
	// replaced by its third before the watch reached it, never came.
	k2 := update(k, "2")
	j2 := update(j, "2")
	copyAt := map[string]*object.Object{"ns.k": k, "ns.j": j2, "ns.gone": gone}
	after := rv(t, j2)
	k3 := update(k2, "3")
	if _, _, err := s.Delete(ctx, "ns.gone", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	l := create("l")
	upTo, err := s.LastRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at, ok, err := s.CatchUp(ctx, copyAt, after, upTo, 10)
	if err != nil || !ok {
		t.Fatalf("catching up: %v %v", ok, err)
	}
	if at < upTo {
		t.Fatalf("revision %d, below the last %d", at, upTo)
	}
	got := map[string]string{}
	for key, o := range copyAt {
		got[key] = o.Metadata.ResourceVersion
	}
	want := map[string]string{"ns.k": k3.Metadata.ResourceVersion, "ns.j": j2.Metadata.ResourceVersion, "ns.l": l.Metadata.ResourceVersion}
	if !cmp.Equal(got, want) {
		t.Fatalf("caught up to %v, want %v", got, want)
	}
	// From the start, more messages follow than allowed.
	if _, ok, err := s.CatchUp(ctx, map[string]*object.Object{}, 0, upTo, 2); ok || err != nil {
		t.Fatalf("with 2 messages allowed of more: %v %v", ok, err)
	}
	// A corrupt value cannot be brought into the copy.
	if _, err := s.PutRaw(ctx, "ns.bad", []byte("not an object")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.CatchUp(ctx, copyAt, at, at, 10); ok || err != nil {
		t.Fatalf("over a corrupt value: %v %v", ok, err)
	}
}

// TestReaches: a read that has read up to a revision holds every change
// up to another unless a message between the two is still stored; one
// replaced by a later write, or removed by a delete, is not left to read.
func TestReaches(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	rev := func(o *object.Object, err error) uint64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return rv(t, o)
	}
	a := widget("ns", "a", `{"v":0}`, nil)
	r1 := rev(s.Create(ctx, a))
	r2 := rev(s.Create(ctx, widget("ns", "b", `{}`, nil)))
	r3 := rev(s.Create(ctx, widget("ns", "c", `{}`, nil)))
	cur, err := s.Get(ctx, "ns.a")
	if err != nil {
		t.Fatal(err)
	}
	next := cur.Clone()
	next.Spec = []byte(`{"v":1}`)
	r4 := rev(s.Update(ctx, next, bus.UpdateOptions{Current: cur}))          // replaces r1
	if _, _, err := s.Delete(ctx, "ns.b", bus.DeleteOptions{}); err != nil { // replaces r2
		t.Fatal(err)
	}
	r5, err := s.LastRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		read, upTo uint64
		want       bool
	}{
		{r5, r5, true},
		{r3, r2, true},
		{0, r3, false}, // c's create is still stored
		{r1, r2, true}, // a's create and b's are replaced
		{r3, r5, false},
		{r4, r5, false}, // b's delete
		{r5, r5 + 10, true},
	} {
		got, err := s.Reaches(ctx, tc.read, tc.upTo)
		if err != nil || got != tc.want {
			t.Errorf("Reaches(%d, %d) = %v, %v; want %v", tc.read, tc.upTo, got, err, tc.want)
		}
	}
}

// TestDeleteWithUIDOutlastsWrites: a delete with a uid precondition is not
// refused because other writes land between its read and its removal (a
// pod's status written while its agent removes it); only another uid is
// a conflict.
func TestDeleteWithUIDOutlastsWrites(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	for round := range 20 {
		created, err := s.Create(ctx, widget("default", "busy", `{}`, nil))
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; wctx.Err() == nil; i++ {
					cur, err := s.Get(wctx, "default.busy")
					if err != nil {
						return // gone
					}
					n := cur.Clone()
					n.Metadata.Labels = map[string]string{"writer": fmt.Sprint(w), "n": fmt.Sprint(i)}
					_, _ = s.Update(wctx, n, bus.UpdateOptions{Current: cur})
				}
			}()
		}
		// Both writing before the delete starts.
		poll.Until(t, "the writers writing", 10*time.Second, func() bool {
			cur, err := s.Get(ctx, "default.busy")
			return err == nil && cur.Metadata.Labels["n"] != "" && cur.Metadata.Labels["n"] != "0"
		})
		_, gone, err := s.Delete(ctx, "default.busy", bus.DeleteOptions{UID: created.Metadata.UID})
		stop()
		wg.Wait()
		if err != nil || !gone {
			t.Fatalf("round %d: delete while others write: gone=%v err=%v", round, gone, err)
		}
	}
}
