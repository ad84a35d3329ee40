package nodeagent

import (
	"context"
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

// A host's writes are queued for its workers: no more than the workers
// are in flight, the rest run in the order they came as workers free,
// and none is lost to the host's stop: those queued before it still run
// on the workers, those queued after on goroutines of their own.
func TestPacerBoundsWritesInFlight(t *testing.T) {
	h := &held{release: make(chan struct{})}
	host, stop := context.WithCancel(context.Background())
	defer stop()
	var workers sync.WaitGroup
	p := startPacer(host, &workers, 2)
	var mu sync.Mutex
	var started []int
	ran := make(chan struct{}, 6)
	for i := range 6 {
		p.Go(func() {
			mu.Lock()
			started = append(started, i)
			mu.Unlock()
			h.hold()
			ran <- struct{}{}
		})
	}
	// Each release frees one worker, which takes the oldest queued once
	// the other has. The host stops with two writes still queued.
	for i := range 6 {
		if i < 5 {
			poll.Until(t, "two writes in flight", 10*time.Second, func() bool { return h.inFlight.Load() == 2 })
		}
		if i == 2 {
			stop()
		}
		select {
		case h.release <- struct{}{}:
			<-ran
		case <-time.After(10 * time.Second):
			t.Fatalf("write %d of 6 never ran", i+1)
		}
	}
	ended := make(chan struct{})
	go func() { workers.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the workers did not end with the host")
	}
	after := make(chan struct{})
	p.Go(func() { close(after) })
	select {
	case <-after:
	case <-time.After(10 * time.Second):
		t.Fatal("a write queued after the stop never ran")
	}
	if m := h.most.Load(); m != 2 {
		t.Fatalf("%d writes were in flight at once, want 2", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(started) != 6 || started[0]+started[1] != 1 || started[2] != 2 || started[3] != 3 || started[4] != 4 || started[5] != 5 {
		t.Fatalf("writes started in the order %v, want the oldest queued first", started)
	}
}
