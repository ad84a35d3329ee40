package reconcile

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// At most limit run at once: the next waits for a slot.
func TestSettlingIsBounded(t *testing.T) {
	s := newSettling(2)
	var running, most, done atomic.Int32
	gate := make(chan struct{})
	for range 5 {
		started := make(chan struct{})
		go func() {
			close(started)
			s.do(func() {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-gate
				running.Add(-1)
				done.Add(1)
			})
		}()
		<-started
	}
	poll.Until(t, "two running", 10*time.Second, func() bool { return running.Load() == 2 })
	close(gate)
	poll.Until(t, "all five done", 10*time.Second, func() bool { return done.Load() == 5 })
	s.wait()
	if m := most.Load(); m != 2 {
		t.Fatalf("%d ran at once, want 2", m)
	}
}

// wait returns once every one started has returned, not before.
func TestSettlingWaitsForThoseUnderWay(t *testing.T) {
	s := newSettling(3)
	var done atomic.Int32
	gate := make(chan struct{})
	for range 3 {
		s.do(func() { <-gate; done.Add(1) }) // a slot each: do returns at once
	}
	waited := make(chan struct{})
	go func() { s.wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("wait returned while three were still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	<-waited
	if n := done.Load(); n != 3 {
		t.Fatalf("wait returned with %d of 3 done", n)
	}
}
