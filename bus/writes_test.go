package bus_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// A process counts each message it stores, by stream, so that the writes
// to the bus can be split by writer: what it counts must be what the
// streams took, refusals and duplicates left out.
func TestWritesCountedByStream(t *testing.T) {
	ctx := context.Background()
	conn := bustest.Conn(t)
	s := newStore(t, conn)
	q, err := conn.Queue(ctx, bus.QueueSpec{Name: "counted"})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := conn.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := conn.History(ctx, bus.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := []string{"widgets.example.com", "queue counted", "leases", "history"}
	counted := func() map[string]float64 {
		out := map[string]float64{}
		for _, l := range labels {
			out[l] = bus.WritesCounted(l)
		}
		return out
	}
	countedBefore := counted()
	storedBefore, err := conn.Writes(ctx)
	if err != nil {
		t.Fatal(err)
	}

	writeOfEach(t, s, q, leases, hist)

	want := map[string]float64{"widgets.example.com": 6, "queue counted": 2, "leases": 3, "history": 2}
	var stored map[string]float64
	poll.Until(t, "the streams to hold every write", 10*time.Second, func() bool {
		after, err := conn.Writes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stored = map[string]float64{}
		for _, l := range labels {
			stored[l] = float64(after[l] - storedBefore[l])
		}
		return maps.Equal(stored, want)
	})
	got := counted()
	for _, l := range labels {
		got[l] -= countedBefore[l]
	}
	if !maps.Equal(got, stored) {
		t.Fatalf("writes counted by stream %v, but the streams stored %v", got, stored)
	}
}

// writeOfEach makes writes of each kind, some refused or dropped, whose
// stored counts are 6 widgets, 2 queue entries, 3 lease writes and 2
// history entries.
func writeOfEach(t *testing.T, s *bus.Store, q *bus.Queue, leases *bus.Leases, hist *bus.History) {
	t.Helper()
	ctx := context.Background()
	// widgets: a create, three created at once, an update and a delete;
	// neither the create of a taken name nor a stale update is stored.
	a, err := s.Create(ctx, widget("default", "a", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, widget("default", "a", `{}`, nil)); !errors.Is(err, bus.ErrAlreadyExists) {
		t.Fatalf("second create: got %v, want ErrAlreadyExists", err)
	}
	_, errs := s.CreateMany(ctx, []*object.Object{widget("default", "b", `{}`, nil), widget("default", "c", `{}`, nil), widget("default", "d", `{}`, nil)}, bus.CreateOptions{})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	next := a.Clone()
	next.Spec = []byte(`{"size":2}`)
	if _, err := s.Update(ctx, next, bus.UpdateOptions{Current: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, next, bus.UpdateOptions{}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("stale update: got %v, want ErrConflict", err)
	}
	if _, _, err := s.Delete(ctx, "default.b", bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// queue: two keys, then the same change again, which the stream's
	// duplicate window drops.
	work := []bus.Work{{Key: "x", MinRevisions: map[string]uint64{"widgets": 7}}, {Key: "y"}}
	if err := q.Add(ctx, work...); err != nil {
		t.Fatal(err)
	}
	if err := q.Add(ctx, work[0]); err != nil {
		t.Fatal(err)
	}
	// leases: taken, renewed, given up.
	ls, err := leases.Acquire(ctx, "counted", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ls, err = leases.Renew(ctx, ls, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := leases.Release(ctx, ls); err != nil {
		t.Fatal(err)
	}
	// history: two entries, handed over without waiting.
	for range 2 {
		if err := hist.Append("widgets.example.com", "default.a", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
}
