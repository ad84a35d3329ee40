package bus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// TestWatchSkippingStatus: a watch that skips status writes still starts
// from every object as it stands, then passes over the changes made to a
// status alone, and not over the others.
func TestWatchSkippingStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	one, err := s.Create(ctx, widget("default", "one", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	setStatus := func(o *object.Object, status string) *object.Object {
		t.Helper()
		o = o.Clone()
		o.Status = json.RawMessage(status)
		o, err := s.Update(ctx, o, bus.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	one = setStatus(one, `{"ready":false}`)
	ch, err := s.Watch(ctx, bus.WatchOptions{SkipStatus: true})
	if err != nil {
		t.Fatal(err)
	}
	if ev := expect(t, ch, bus.Added, "one"); string(ev.Object.Status) != `{"ready":false}` {
		t.Fatalf("the initial state has status %s, want the one last written", ev.Object.Status)
	}
	expect(t, ch, bus.Synced, "")
	one = setStatus(one, `{"ready":true}`)
	one.Metadata.Labels = map[string]string{"k": "v"}
	one.Status = json.RawMessage(`{"ready":true,"also":"labels"}`)
	if _, err := s.Update(ctx, one, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := expect(t, ch, bus.Modified, "one"); ev.Object.Metadata.Labels["k"] != "v" {
		t.Fatalf("the status write came through: %s", ev.Object.Status)
	}
	if _, err := s.Create(ctx, widget("default", "two", `{}`, nil)); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, bus.Added, "two")
}

// TestWatchRaw: a raw watch hands over each stored value undecoded, the
// initial state's, a change's and a delete's last state, and so does a
// shared one that resumes.
func TestWatchRaw(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	one, err := s.Create(ctx, widget("default", "one", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, bus.WatchOptions{Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := s.Watch(ctx, bus.WatchOptions{Raw: true, Shared: true, AfterRevision: rv(t, one)})
	if err != nil {
		t.Fatal(err)
	}
	check := func(ch <-chan bus.Event, typ bus.EventType, rev uint64, spec string) {
		t.Helper()
		ev := nextEvent(t, ch)
		if ev.Type != typ || ev.Revision != rev || ev.Object != nil {
			t.Fatalf("got %s@%d with object %v, want %s@%d and no object", ev.Type, ev.Revision, ev.Object, typ, rev)
		}
		o, err := object.Decode(ev.Raw)
		if err != nil || o.Metadata.Name != "one" || string(o.Spec) != spec {
			t.Fatalf("%s@%d: raw %s decodes to %+v (%v), want one with spec %s", typ, rev, ev.Raw, o, err, spec)
		}
	}
	check(ch, bus.Added, rv(t, one), `{"size":1}`)
	expectSynced(t, "the raw watch", ch)
	expectSynced(t, "the resumed raw watch", resumed)
	up := one.Clone()
	up.Spec = json.RawMessage(`{"size":2}`)
	two, err := s.Update(ctx, up, bus.UpdateOptions{Current: one})
	if err != nil {
		t.Fatal(err)
	}
	// Each change is awaited before the next: a key keeps one message, so
	// a watch may see only the later of two quick writes.
	for _, c := range []<-chan bus.Event{ch, resumed} {
		check(c, bus.Modified, rv(t, two), `{"size":2}`)
	}
	gone, _, err := s.Delete(ctx, one.Key(), bus.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []<-chan bus.Event{ch, resumed} {
		check(c, bus.Deleted, rv(t, gone), `{"size":2}`)
	}
}

// TestWatchEventsTellWhenStored: every watch's events carry the time the
// store took the write, between the writer's call and its answer: a
// watch from the start, a raw one, and shared ones (which take objects
// another shared read decoded).
func TestWatchEventsTellWhenStored(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	before := time.Now()
	one, err := s.Create(ctx, widget("default", "one", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	watches := map[string]bus.WatchOptions{
		"from the start": {}, "raw": {Raw: true}, "shared, from the start": {Shared: true},
		"resumed, shared": {Shared: true, AfterRevision: rv(t, one)},
	}
	chans := map[string]<-chan bus.Event{}
	for name, opts := range watches {
		ch, err := s.Watch(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		chans[name] = ch
	}
	for _, name := range []string{"from the start", "raw", "shared, from the start"} {
		if ev := nextEvent(t, chans[name]); ev.Revision != rv(t, one) || ev.Time.Before(before) || ev.Time.After(created) {
			t.Fatalf("%s: the create at %d stored at %s, want between %s and %s", name, ev.Revision, ev.Time, before, created)
		}
	}
	for name, ch := range chans {
		expectSynced(t, name, ch)
	}
	up := one.Clone()
	up.Spec = json.RawMessage(`{"size":2}`)
	before = time.Now()
	two, err := s.Update(ctx, up, bus.UpdateOptions{Current: one})
	if err != nil {
		t.Fatal(err)
	}
	updated := time.Now()
	for name, ch := range chans {
		if ev := nextEvent(t, ch); ev.Revision != rv(t, two) || ev.Time.Before(before) || ev.Time.After(updated) {
			t.Fatalf("%s: the update at %d stored at %s, want between %s and %s", name, ev.Revision, ev.Time, before, updated)
		}
	}
}

// TestWatchSkipCreate: a watch that skips some creates gets none of them
// after Synced, every other create, and the later changes of a skipped
// object; before Synced, the current state is sent whole.
func TestWatchSkipCreate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	early, err := s.Create(ctx, widget("default", "early", `{"size":0}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	// It reads the spec where the writer's layout places it.
	small := func(value []byte, l object.Layout) bool {
		spec, _, ok := l.Parts(value)
		if !ok {
			t.Errorf("a create came without its writer's layout: %s", value)
		}
		return bytes.Equal(spec, []byte(`{"size":0}`))
	}
	ch, err := s.Watch(ctx, bus.WatchOptions{SkipCreate: small})
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch); ev.Type != bus.Added || ev.Revision != rv(t, early) {
		t.Fatalf("the current state: %s@%d, want the skipped shape's object Added@%d", ev.Type, ev.Revision, rv(t, early))
	}
	expectSynced(t, "the watch", ch)
	skipped, err := s.Create(ctx, widget("default", "skipped", `{"size":0}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := s.Create(ctx, widget("default", "kept", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	up := skipped.Clone()
	up.Spec = json.RawMessage(`{"size":0,"color":"red"}`)
	changed, err := s.Update(ctx, up, bus.UpdateOptions{Current: skipped})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		typ bus.EventType
		o   *object.Object
	}{{bus.Added, kept}, {bus.Modified, changed}} {
		if ev := nextEvent(t, ch); ev.Type != want.typ || ev.Revision != rv(t, want.o) || ev.Object == nil || ev.Object.Metadata.Name != want.o.Metadata.Name {
			t.Fatalf("got %s@%d %v, want %s@%d of %s", ev.Type, ev.Revision, ev.Object, want.typ, rv(t, want.o), want.o.Metadata.Name)
		}
	}
}
