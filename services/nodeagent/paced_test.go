package nodeagent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// held holds every call until released, counting those in flight.
type held struct {
	release  chan struct{}
	inFlight atomic.Int32
	most     atomic.Int32
}

func (h *held) hold() {
	n := h.inFlight.Add(1)
	for {
		m := h.most.Load()
		if n <= m || h.most.CompareAndSwap(m, n) {
			break
		}
	}
	<-h.release
	h.inFlight.Add(-1)
}

// A host's writes wait for a worker: no more than the workers are in
// flight, the rest go through as workers free, and a write whose context
// ends while it waits gives up without running.
func TestPacerBoundsWritesInFlight(t *testing.T) {
	h := &held{release: make(chan struct{})}
	host, stop := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	defer workers.Wait()
	defer stop()
	p := startPacer(host, &workers, 2)
	var ran atomic.Int32
	done := make(chan error, 5)
	for range 5 {
		go func() { done <- p.run(context.Background(), func() { h.hold(); ran.Add(1) }) }()
	}
	poll.Until(t, "two writes in flight", 10*time.Second, func() bool { return h.inFlight.Load() == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		waited <- p.run(ctx, func() { t.Error("a write whose context ended before a worker took it ran") })
	}()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("a write whose context ended while it waited: %v", err)
	}
	for range 5 {
		h.release <- struct{}{}
	}
	for range 5 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if m := h.most.Load(); m != 2 {
		t.Fatalf("%d writes were in flight at once, want 2", m)
	}
	if n := ran.Load(); n != 5 {
		t.Fatalf("%d writes ran, want 5", n)
	}
}
