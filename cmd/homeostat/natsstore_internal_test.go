package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// The store collects at a quarter's growth once its live heap is large,
// leaves at least the headroom below that, and never waits longer than
// Go's default.
func TestStoreGCPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},              // nothing measured yet
		{1, 100},              // the headroom would be all but endless: the default bounds it
		{16 << 20, 100},       // the headroom four times the heap
		{64 << 20, 100},       // the headroom the whole heap
		{(64 << 20) + 1, 100}, // rounded up, to leave the whole headroom
		{128 << 20, 50},       // the headroom half the heap
		{(128 << 20) + 1, 50}, // just short of half, rounded up
		{256 << 20, 25},       // a quarter is the headroom
		{(256 << 20) - 1, 26}, // a little more than a quarter is
		{300 << 20, 25},       // a quarter is more than the headroom
		{4 << 30, 25},         // however large
		{1 << 62, 25},         // no overflow
	} {
		if got := storeGCPercent(tc.live); got != tc.want {
			t.Errorf("storeGCPercent(%d bytes) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// The pacer sets the process's GOGC from its live heap, and stops with
// its context. The test holds a heap large enough that the answer is
// neither the default nor the floor. (No test of this package runs in
// parallel: GOGC is the process's.)
func TestPaceStoreCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(7)) // no live heap gives 7
	held := make([]byte, 160<<20)                   // live, pointer-free: as a store's buffers
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); paceStoreCollector(ctx) }()
	defer func() { cancel(); <-done }()
	var gogc, live uint64
	poll.Until(t, "GOGC set from the live heap", 10*time.Second, func() bool {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		gogc, live = s[0].Value.Uint64(), s[1].Value.Uint64()
		return int(gogc) == storeGCPercent(live)
	})
	if gogc == 100 || gogc == storeGCFraction {
		t.Fatalf("GOGC %d at %d MiB live: the test's heap should give neither the default nor the floor", gogc, live>>20)
	}
	runtime.KeepAlive(held)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pacer did not stop with its context")
	}
}
