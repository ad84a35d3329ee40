package bus_test

import (
	"context"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
)

// Confirmations take revisions in a bucket's stream but are no key's:
// lists and watches of keys never show them, a watch from a list's
// revision (a confirmation's) misses nothing after it, and a watch that
// asks for Progress hears of each, whether it reads alone or from the
// store's shared read.
func TestConfirmationsAreNoKeys(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	a, err := s.Create(ctx, widget("default", "a", `{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(ctx, widget("other", "b", `{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.List(ctx, bus.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2 || l.Items[0].Key() != a.Key() || l.Items[1].Key() != b.Key() {
		t.Fatalf("list: %d items, want a and b", len(l.Items))
	}
	if l.Revision <= rv(t, b) {
		t.Fatalf("the list's revision %d is not its confirmation's, after the last write's %d", l.Revision, rv(t, b))
	}

	fromStart, err := s.Watch(ctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{a.Key(), b.Key(), ""} {
		ev := nextEvent(t, fromStart)
		if ev.Key != want || (want == "") != (ev.Type == bus.Synced) {
			t.Fatalf("a watch from the start: %s %q, want %q", ev.Type, ev.Key, want)
		}
	}
	watches := map[string]<-chan bus.Event{"from the start": fromStart}
	for name, opts := range map[string]bus.WatchOptions{
		"shared":                  {AfterRevision: l.Revision, Shared: true},
		"shared, with progress":   {AfterRevision: l.Revision, Shared: true, Progress: true},
		"alone, with progress":    {AfterRevision: l.Revision, Progress: true},
		"one namespace, shared":   {AfterRevision: l.Revision, Shared: true, Namespace: "default"},
		"one namespace, alone":    {AfterRevision: l.Revision, Namespace: "default"},
		"one namespace, progress": {AfterRevision: l.Revision, Namespace: "default", Progress: true},
	} {
		ch, err := s.Watch(ctx, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		watches[name] = ch
	}

	confirmed, err := s.LastRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Create(ctx, widget("default", "c", `{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	for name, ch := range watches {
		ev := nextChange(t, ch)
		if progress := name == "shared, with progress" || name == "alone, with progress" || name == "one namespace, progress"; progress {
			if ev.Type != bus.Progress || ev.Revision != confirmed {
				t.Fatalf("%s: %s at %d, want Progress at the confirmed %d", name, ev.Type, ev.Revision, confirmed)
			}
			ev = nextChange(t, ch)
		}
		if ev.Type != bus.Added || ev.Key != c.Key() || ev.Revision != rv(t, c) {
			t.Fatalf("%s: %s %q at %d, want the create of %s at %d", name, ev.Type, ev.Key, ev.Revision, c.Key(), rv(t, c))
		}
	}
}

// nextChange is a watch's next event other than Synced.
func nextChange(t *testing.T, ch <-chan bus.Event) bus.Event {
	t.Helper()
	for {
		if ev := nextEvent(t, ch); ev.Type != bus.Synced {
			return ev
		}
	}
}
