package gcpace_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/homeostat/homeostat/gcpace"
	"github.com/homeostat/homeostat/testenv/poll"
)

const mib = 1 << 20

// A pace leaves at least its headroom, never more than its Max, and its
// Percent where that leaves more; the runtime's minimum heap, which scales
// with the percent, stays within live+headroom.
func TestGOGC(t *testing.T) {
	store := gcpace.Pace{Percent: 25, Headroom: 64 * mib, Max: 100}
	role := gcpace.Pace{Percent: 100, Headroom: 128 * mib}
	for _, tc := range []struct {
		name string
		pace gcpace.Pace
		live uint64
		want int
	}{
		{"store, nothing measured yet", store, 0, 100},
		{"store, a heap of a byte: Max bounds it", store, 1, 100},
		{"store, the headroom four times the heap", store, 16 * mib, 100},
		{"store, the headroom the whole heap", store, 64 * mib, 100},
		{"store, rounded up to leave the whole headroom", store, 64*mib + 1, 100},
		{"store, the headroom half the heap", store, 128 * mib, 50},
		{"store, just short of half, rounded up", store, 128*mib + 1, 50},
		{"store, a quarter is the headroom", store, 256 * mib, 25},
		{"store, a little more than a quarter is", store, 256*mib - 1, 26},
		{"store, a quarter is more than the headroom", store, 300 * mib, 25},
		{"store, however large", store, 4 << 30, 25},
		{"store, no overflow", store, 1 << 62, 25},
		{"role, nothing measured yet: the minimum heap is the headroom", role, 0, 3200},
		{"role, a heap of a byte: the minimum heap is live+headroom", role, 1, 3200},
		{"role, a heap of a MiB: the minimum heap is live+headroom", role, mib, 3225},
		{"role, the headroom eight times the heap", role, 16 * mib, 800},
		{"role, rounded up", role, 16*mib + 1, 800},
		{"role, the headroom the whole heap: the default", role, 128 * mib, 100},
		{"role, beyond: the default", role, 1 << 30, 100},
		{"role, no overflow", role, 1 << 62, 100},
		{"no headroom: the percent", gcpace.Pace{Percent: 50}, 16 * mib, 50},
	} {
		if got := tc.pace.GOGC(tc.live); got != tc.want {
			t.Errorf("%s: GOGC(%d bytes) = %d, want %d", tc.name, tc.live, got, tc.want)
		}
		if tc.pace.Max == 0 && tc.live < tc.pace.Headroom {
			if least := uint64(4*mib) * uint64(tc.pace.GOGC(tc.live)) / 100; least > tc.live+tc.pace.Headroom {
				t.Errorf("%s: the runtime's least heap goal %d MiB is beyond live+headroom", tc.name, least/mib)
			}
		}
	}
}

// gogc reads the process's GOGC and live heap after a collection.
func gogc() (pct int, live uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), s[1].Value.Uint64()
}

// Run sets the process's GOGC from its live heap, and puts back what it
// found when its context ends. The test holds a heap large enough that
// the answer is neither the percent nor the most. (No test of this
// package runs in parallel: GOGC is the process's.)
func TestRun(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(7))
	p := gcpace.Pace{Percent: 25, Headroom: 64 * mib, Max: 100}
	held := make([]byte, 160*mib) // live, pointer-free: as a store's buffers
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); gcpace.Run(ctx, p) }()
	defer func() { cancel(); <-done }()
	var pct int
	var live uint64
	poll.Until(t, "GOGC set from the live heap", 10*time.Second, func() bool {
		pct, live = gogc()
		return pct == p.GOGC(live)
	})
	if pct == p.Max || pct == p.Percent {
		t.Fatalf("GOGC %d at %d MiB live: the test's heap should give neither the most nor the percent", pct, live/mib)
	}
	runtime.KeepAlive(held)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
	if pct, _ := gogc(); pct != 7 {
		t.Fatalf("GOGC %d after Run, want the 7 it found", pct)
	}
}

// A GOGC given the process stands: Run leaves it alone.
func TestRunLeavesAGivenGOGC(t *testing.T) {
	t.Setenv("GOGC", "7")
	defer debug.SetGCPercent(debug.SetGCPercent(7))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gcpace.Run(ctx, gcpace.Pace{Percent: 100, Headroom: 128 * mib})
	if ctx.Err() != nil {
		t.Fatal("Run waited for its context with GOGC given")
	}
	if pct, _ := gogc(); pct != 7 {
		t.Fatalf("GOGC %d, want the 7 given", pct)
	}
}
