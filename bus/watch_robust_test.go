package bus_test

// Watches under stress: surviving the loss of their consumer, and resuming
// from a revision the store has not reached.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// change is what a watch event says happened: its type, key and revision.
type change struct {
	typ bus.EventType
	key string
	rev uint64
}

func (c change) String() string { return fmt.Sprintf("%s %s@%d", c.typ, c.key, c.rev) }

// TestWatchSurvivesLostDelivery: a watch whose consumer is deleted on the
// server behind its back resumes with a new one and delivers every later
// change once, in revision order, with no gap; so do the watches that
// share one read (see TestFanoutSharesOneRead).
func TestWatchSurvivesLostDelivery(t *testing.T) {
	t.Run("alone", func(t *testing.T) { watchSurvivesLostDelivery(t, false) })
	t.Run("shared", func(t *testing.T) { watchSurvivesLostDelivery(t, true) })
}

func watchSurvivesLostDelivery(t *testing.T, shared bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const resource = "survive.example.com"
	stream := streamOf(resource)
	c := bustest.Conn(t)
	s := openStore(t, c, resource)
	js := rawJetStream(t, c)
	restartsBefore := readRestarts(t, stream)

	live := map[string]*object.Object{}
	for i := range 10 {
		o, err := s.Create(ctx, widget("default", fmt.Sprintf("r-1-%d", i), `{}`, nil))
		if err != nil {
			t.Fatal(err)
		}
		live[o.Key()] = o
	}
	opts, initial := bus.WatchOptions{}, len(live)
	var shares []<-chan bus.Event
	if shared {
		last, err := s.LastRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		opts, initial = bus.WatchOptions{Shared: true, AfterRevision: last}, 0
	}
	ch, err := s.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := waitSynced(t, ch); len(got) != initial {
		t.Fatalf("initial state: %d events, want %d", len(got), initial)
	}
	if shared {
		for range 3 {
			other, err := s.Watch(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			waitSynced(t, other)
			shares = append(shares, other)
		}
	}

	deleted := 0
	for round := range 3 {
		// The watch's current consumer: the first one, then each one it
		// resumed with (it exists: it delivered the previous round).
		poll.Until(t, "the watch's consumer", 30*time.Second, func() bool {
			return len(consumerNames(ctx, t, js, stream)) > 0
		})
		deleted += deleteConsumers(ctx, t, js, stream)
		want := writeRoundUndelivered(ctx, t, s, live, round)
		expectChanges(t, ch, round, want)
		for _, other := range shares {
			expectChanges(t, other, round, want)
		}
	}
	if deleted < 3 {
		t.Fatalf("deleted %d consumers, want one per round", deleted)
	}
	// Nothing delivered twice is still queued: the next event is the next write.
	last, err := s.Create(ctx, widget("default", "sentinel", `{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch); ev.Type != bus.Added || ev.Key != last.Key() || ev.Revision != rv(t, last) {
		t.Fatalf("after the rounds: got %s %s@%d, want the sentinel's create at %d", ev.Type, ev.Key, ev.Revision, rv(t, last))
	}
	if after := readRestarts(t, stream); after <= restartsBefore {
		t.Fatalf("homeostat_bus_read_restarts_total{stream=%q} stayed at %v", stream, after)
	}
	poll.Until(t, "the resumed watch to hold exactly one consumer", 30*time.Second, func() bool {
		n, err := s.ConsumerCount(ctx)
		return err == nil && n == 1
	})
}

// writeRoundUndelivered makes one round's creates, updates and deletes, all
// while the watch has no delivery, keeping live up to date, and returns the
// changes the watch must then deliver, in order.
//
// Each key is written once per round: a watch that resumes after a gap sees
// a key's latest value only, so two writes of one key in the gap would fold
// into one event.
func writeRoundUndelivered(ctx context.Context, t *testing.T, s *bus.Store, live map[string]*object.Object, round int) []change {
	t.Helper()
	var want []change
	for i := range 10 {
		o, err := s.Create(ctx, widget("default", fmt.Sprintf("r%d-%d", round, i), `{}`, nil))
		if err != nil {
			t.Fatal(err)
		}
		live[o.Key()] = o
		want = append(want, change{bus.Added, o.Key(), rv(t, o)})
	}
	for i := range 5 { // keys created in the previous round
		key := fmt.Sprintf("default.r%d-%d", round-1, i)
		o := live[key].Clone()
		o.Spec = json.RawMessage(`{"changed":true}`)
		up, err := s.Update(ctx, o, bus.UpdateOptions{Current: live[key]})
		if err != nil {
			t.Fatal(err)
		}
		live[key] = up
		want = append(want, change{bus.Modified, key, rv(t, up)})
	}
	for i := 5; i < 8; i++ {
		key := fmt.Sprintf("default.r%d-%d", round-1, i)
		gone, ok, err := s.Delete(ctx, key, bus.DeleteOptions{})
		if err != nil || !ok {
			t.Fatalf("delete %s: gone=%v err=%v", key, ok, err)
		}
		delete(live, key)
		want = append(want, change{bus.Deleted, key, rv(t, gone)})
	}
	return want
}

// expectChanges reads a round's events off the watch and checks they are
// exactly the changes wanted, in order, each but a delete carrying its
// object at the change's revision.
func expectChanges(t *testing.T, ch <-chan bus.Event, round int, want []change) {
	t.Helper()
	for i, w := range want {
		ev := nextEvent(t, ch)
		got := change{ev.Type, ev.Key, ev.Revision}
		if got != w {
			t.Fatalf("round %d, change %d: got %v (err %v), want %v", round, i, got, ev.Err, w)
		}
		if ev.Type != bus.Deleted && (ev.Object == nil || rv(t, ev.Object) != w.rev) {
			t.Fatalf("round %d, change %d: %v carries object %+v", round, i, got, ev.Object)
		}
	}
}

// TestWatchFromFutureRevision: resuming from a revision the store has not
// reached fails at once rather than waiting for it.
func TestWatchFromFutureRevision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := openStore(t, bustest.Conn(t), "future.example.com")
	if _, err := s.Create(ctx, widget("default", "a", `{}`, nil)); err != nil {
		t.Fatal(err)
	}
	last, err := s.LastRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []uint64{last + 1, last + 1_000_000, 1 << 62} {
		ch, err := s.Watch(ctx, bus.WatchOptions{AfterRevision: after})
		if !errors.Is(err, bus.ErrFutureRevision) {
			t.Fatalf("watch after %d (latest %d): channel %v, err %v; want ErrFutureRevision", after, last, ch != nil, err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the watches blocked until the deadline")
	}
	// From the latest revision itself, the watch runs.
	ch, err := s.Watch(ctx, bus.WatchOptions{AfterRevision: last})
	if err != nil {
		t.Fatalf("watch after the latest revision: %v", err)
	}
	waitSynced(t, ch)
}
