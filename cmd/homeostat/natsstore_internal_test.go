package main

import (
	"context"
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
		{16 << 20, 100},       // the headroom would be four times the heap: the default bounds it
		{64 << 20, 100},       // the headroom is the whole heap
		{128 << 20, 50},       // the headroom is half the heap
		{256 << 20, 25},       // a quarter is the headroom
		{300 << 20, 25},       // a quarter is more than the headroom
		{4 << 30, 25},         // however large
		{(64 << 20) + 1, 99},  // just past the headroom
		{(256 << 20) - 1, 25}, // the headroom rounds down to a quarter
	} {
		if got := storeGCPercent(tc.live); got != tc.want {
			t.Errorf("storeGCPercent(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// The pacer sets the process's GOGC from its live heap, and stops with
// its context.
func TestPaceStoreCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	debug.SetGCPercent(7) // no live heap this test makes gives 7
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); paceStoreCollector(ctx) }()
	poll.Until(t, "GOGC set from the live heap", 10*time.Second, func() bool {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		pct := s[0].Value.Uint64()
		return pct >= storeGCFraction && pct <= 100
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pacer did not stop with its context")
	}
}
