package nodeagent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// heldWriter holds every write until released, counting those in flight.
type heldWriter struct {
	release  chan struct{}
	inFlight atomic.Int32
	most     atomic.Int32
}

func (w *heldWriter) hold() {
	n := w.inFlight.Add(1)
	for {
		m := w.most.Load()
		if n <= m || w.most.CompareAndSwap(m, n) {
			break
		}
	}
	<-w.release
	w.inFlight.Add(-1)
}

func (w *heldWriter) UpdateStatus(_ context.Context, pod, _ *object.Object) (*object.Object, error) {
	w.hold()
	return pod, nil
}

func (w *heldWriter) Remove(context.Context, string, string) error {
	w.hold()
	return nil
}

// A host's writes wait for a worker: no more than the workers are in
// flight, the rest go through as workers free, and a write whose context
// ends while it waits gives up.
func TestPacedWriterBoundsWritesInFlight(t *testing.T) {
	next := &heldWriter{release: make(chan struct{})}
	host, stop := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	defer workers.Wait()
	defer stop()
	w := startPacedWriter(host, &workers, next, 2)
	done := make(chan error, 5)
	for i := range 5 {
		go func() {
			if i%2 == 0 {
				_, err := w.UpdateStatus(context.Background(), &object.Object{}, nil)
				done <- err
				return
			}
			done <- w.Remove(context.Background(), "k", "u")
		}()
	}
	poll.Until(t, "two writes in flight", 10*time.Second, func() bool { return next.inFlight.Load() == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { _, err := w.UpdateStatus(ctx, &object.Object{}, nil); waited <- err }()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("a write whose context ended while it waited: %v", err)
	}
	for range 5 {
		next.release <- struct{}{}
	}
	for range 5 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if m := next.most.Load(); m != 2 {
		t.Fatalf("%d writes were in flight at once, want 2", m)
	}
}
