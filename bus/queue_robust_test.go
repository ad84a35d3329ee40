package bus_test

// Work queues when the bus loses what they send it: acknowledgements of
// deliveries and of additions.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/testenv/poll"
)

// TestAckSurvivesQueueWithoutLeader: an ack sent while the queue has no
// leader (two of three servers down) is sent again until a leader takes
// it, instead of being lost and leaving the key claimed for AckWait.
func TestAckSurvivesQueueWithoutLeader(t *testing.T) {
	cl := bustest.NewCluster(t)
	conn := cl.Conn(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// An AckWait far beyond the test's deadlines: redelivery cannot pass
	// for a confirmed ack.
	q, err := conn.Queue(ctx, bus.QueueSpec{Name: "acks", AckWait: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Add(ctx, bus.Work{Key: "default.one"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan *bus.Delivery, 1)
	consumed := make(chan error, 1)
	go func() { consumed <- q.Consume(ctx, 1, func(d *bus.Delivery) { got <- d }) }()
	d := poll.Receive(t, "a delivery", 30*time.Second, got)

	cl.Stop(1)
	cl.Stop(2)
	acked := make(chan error, 1)
	go func() { acked <- d.Ack(ctx) }()
	select {
	case err := <-acked:
		t.Fatalf("Ack returned %v with no quorum; it can only have been lost", err)
	case <-time.After(2 * time.Second):
	}
	cl.Start(1)
	select {
	case err := <-acked:
		if err != nil {
			t.Fatalf("Ack: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Ack not confirmed within a minute of quorum returning")
	}
	poll.Until(t, "the queue empty, nothing in flight", 30*time.Second, func() bool {
		pending, inFlight, err := q.Depth(ctx)
		return err == nil && pending == 0 && inFlight == 0
	})
	cancel()
	if err := <-consumed; err != nil {
		t.Fatalf("Consume: %v", err)
	}
}

// TestAddWithLostAckReturns: an enqueue whose acknowledgement never comes
// ends with ErrUnavailable, for the caller to retry, as soon as
// acknowledgements stop coming, instead of waiting forever or out its
// deadline. A stream's leader that dies after taking a message loses its
// acknowledgement while the client's connection stays healthy; here the
// queue's stream is gone and a silent subscriber takes the message.
func TestAddWithLostAckReturns(t *testing.T) {
	srv := bustest.Conn(t)
	ctx := context.Background()
	q, err := srv.Queue(ctx, bus.QueueSpec{Name: "lostack"})
	if err != nil {
		t.Fatal(err)
	}
	js := rawJetStream(t, srv)
	if err := js.DeleteStream(ctx, "WQ_lostack"); err != nil {
		t.Fatal(err)
	}
	nc := js.Conn()
	sub, err := nc.SubscribeSync("wq.lostack.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	added := make(chan error, 1)
	// A deadline of its own, under the five seconds every publish gets, so
	// that waiting it out shows in the error.
	actx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	go func() { added <- q.Add(actx, bus.Work{Key: "default.one"}) }()
	if _, err := sub.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("the enqueue never reached the bus: %v", err)
	}
	select {
	case err := <-added:
		if !errors.Is(err, bus.ErrUnavailable) {
			t.Fatalf("Add = %v, want ErrUnavailable", err)
		}
		// It gives up when acknowledgements stop coming, not by waiting
		// out its whole deadline: the retry should reach the next leader
		// as soon as there is one.
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Add waited out its deadline instead of giving up on the stalled acknowledgement: %v", err)
		}
		t.Logf("Add gave up after %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(30 * time.Second):
		t.Fatal("Add still waiting 30s after its acknowledgement was lost")
	}
}
