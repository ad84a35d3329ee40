package bus_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/testenv/poll"
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
		"shared":                {AfterRevision: l.Revision, Shared: true},
		"shared, with progress": {AfterRevision: l.Revision, Shared: true, Progress: true},
		"alone, with progress":  {AfterRevision: l.Revision, Progress: true},
		"one namespace, shared": {AfterRevision: l.Revision, Shared: true, Namespace: "default"},
		"one namespace, alone":  {AfterRevision: l.Revision, Namespace: "default"},
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
		if progress := name == "shared, with progress" || name == "alone, with progress"; progress {
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

// A bucket made before confirmations (no confirmation subject, rollups
// allowed, as NATS's client makes one) gets both put right by the next
// process that may change streams and opens it; a confined one waits for
// that, saying why, instead of failing every list for want of a subject.
func TestOldBucketsGetTheirConfirmations(t *testing.T) {
	ctx := context.Background()
	op, server := operatorBus(t)
	if _, err := server.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	admin, err := op.ControlPlaneCreds("admin")
	if err != nil {
		t.Fatal(err)
	}
	raw := bus.RawConnForTest(t, server.ClientURL(), admin, func(error) {})
	js, err := jetstream.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_hs_pods")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Subjects, cfg.AllowRollup = []string{"$KV.hs_pods.>"}, true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	creds, err := op.RoleCreds(bus.RoleScheduler)
	if err != nil {
		t.Fatal(err)
	}
	confined, err := bus.Connect(ctx, bus.Config{URLs: server.ClientURL(), Creds: creds, Name: "scheduler"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(confined.Close)
	var last error
	poll.Until(t, "a confined process to say it waits for the bucket's confirmation subject", 30*time.Second, func() bool {
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, last = confined.Store(short, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
		return errors.Is(last, bus.ErrNotGuarded)
	})
	if !errors.Is(last, bus.ErrUnavailable) {
		t.Fatalf("a confined process opening an old bucket: %v; want it unavailable", last)
	}
	opened := make(chan error, 1)
	go func() {
		_, err := confined.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
		opened <- err
	}()

	control, err := bus.Connect(ctx, bus.Config{URLs: server.ClientURL(), Creds: admin, Name: "api"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(control.Close)
	pods, err := control.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	if st, err = js.Stream(ctx, "KV_hs_pods"); err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config; !slices.Contains(got.Subjects, "$KV.hs_pods") || got.AllowRollup {
		t.Fatalf("the reopened bucket's subjects %v, rollups allowed %v; want its confirmation subject and no rollups", got.Subjects, got.AllowRollup)
	}
	if _, err := pods.List(ctx, bus.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("the confined process, once the bucket had its subject: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the confined process still waits for a bucket that has its subject")
	}
}
