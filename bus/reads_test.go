package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/testenv/poll"
)

// TestReadsHaveAConnectionOfTheirOwn: a process's writes go out on one
// connection and its reads (a watch's pulls, and what they deliver) on
// another, so that a pull never waits behind a burst of writes.
func TestReadsHaveAConnectionOfTheirOwn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := bustest.Conn(t)
	s := newStore(t, c)
	writes, reads := t.Name(), t.Name()+" reads"
	traffic := func() (w, r bus.Traffic) {
		t.Helper()
		all := bus.ConnTraffic(t, c)
		w, okW := all[writes]
		r, okR := all[reads]
		if !okW || !okR {
			t.Fatalf("the server's clients are %v, want %q and %q among them", all, writes, reads)
		}
		return w, r
	}

	// The server counts a connection's messages after it has handled
	// them, and may answer the last before it has counted it: a count
	// that must grow is waited for.
	settled := func(what string, enough func(w, r bus.Traffic) bool) (w, r bus.Traffic) {
		t.Helper()
		poll.Until(t, what, 10*time.Second, func() bool {
			w, r = traffic()
			return enough(w, r)
		})
		return w, r
	}

	w0, r0 := traffic()
	const n = 20
	for i := range n {
		if _, err := s.Create(ctx, widget("default", fmt.Sprintf("w%d", i), `{}`, nil)); err != nil {
			t.Fatal(err)
		}
	}
	w1, r1 := settled("the writes' connection counted a message for each create", func(w, _ bus.Traffic) bool {
		return w.In-w0.In >= n
	})
	if r1.In != r0.In {
		t.Errorf("the reads' connection sent %d messages while the process only wrote", r1.In-r0.In)
	}

	ch, err := s.Watch(ctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		expect(t, ch, bus.Added, fmt.Sprintf("w%d", i))
	}
	expect(t, ch, bus.Synced, "")
	w2, _ := settled("the reads' connection asked for the watch's objects and was sent them", func(_, r bus.Traffic) bool {
		return r.Out-r1.Out >= n && r.In != r1.In
	})
	// The watch may ask the stream's leader a question on the writes'
	// connection (where its stream ends); its deliveries do not come there.
	if got := w2.Out - w1.Out; got >= n {
		t.Errorf("the writes' connection was sent %d messages while a watch read %d objects", got, n)
	}

	// A work queue's deliveries come as reads do; its acknowledgements,
	// and the extensions of a worker's claim, go on the writes'
	// connection, where their order holds.
	q, err := c.Queue(ctx, bus.QueueSpec{Name: "reads"})
	if err != nil {
		t.Fatal(err)
	}
	work := make([]bus.Work, n)
	for i := range work {
		work[i] = bus.Work{Key: fmt.Sprintf("default.k%d", i)}
	}
	if err := q.Add(ctx, work...); err != nil {
		t.Fatal(err)
	}
	w3, r3 := traffic()
	acked := make(chan error, n)
	qctx, stop := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- q.Consume(qctx, 16, func(d *bus.Delivery) {
			if err := d.InProgress(); err != nil {
				acked <- err
				return
			}
			acked <- d.Ack(qctx)
		})
	}()
	for range n {
		if err := poll.Receive(t, "an acknowledged delivery", 30*time.Second, acked); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	stop()
	if err := <-consumed; err != nil {
		t.Fatalf("Consume: %v", err)
	}
	w4, r4 := settled("the deliveries sent on the reads' connection, each acknowledgement and extension on the writes'",
		func(w, r bus.Traffic) bool { return r.Out-r3.Out >= n && w.In-w3.In >= 2*n })
	// Its pulls, a batch of the workers' number at a time, are few.
	if got := r4.In - r3.In; got >= n {
		t.Errorf("the reads' connection sent %d messages for %d deliveries: the extensions went there", got, n)
	}
	if got := w4.Out - w3.Out; got > n+2 {
		t.Errorf("the writes' connection was sent %d messages for %d acknowledgements' answers", got, n)
	}
}
