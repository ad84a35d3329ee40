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
// Percent where that leaves more; the runtime's least heap goal, which
// scales with the percent, stays within live+headroom.
func TestGOGC(t *testing.T) {
	store := gcpace.Pace{Percent: 25, Headroom: 64 * mib, Max: 100}
	role := gcpace.Pace{Percent: 100, Headroom: 128 * mib}
	live := func(n uint64) gcpace.Heap { return gcpace.Heap{Live: n} }
	for _, tc := range []struct {
		name string
		pace gcpace.Pace
		heap gcpace.Heap
		want int
	}{
		{"store, nothing measured yet", store, live(0), 100},
		{"store, a heap of a byte: Max bounds it", store, live(1), 100},
		{"store, the headroom four times the heap", store, live(16 * mib), 100},
		{"store, the headroom the whole heap", store, live(64 * mib), 100},
		{"store, rounded up to leave the whole headroom", store, live(64*mib + 1), 100},
		{"store, the headroom half the heap", store, live(128 * mib), 50},
		{"store, just short of half, rounded up", store, live(128*mib + 1), 50},
		{"store, a quarter is the headroom", store, live(256 * mib), 25},
		{"store, a little more than a quarter is", store, live(256*mib - 1), 26},
		{"store, a quarter is more than the headroom", store, live(300 * mib), 25},
		{"store, however large", store, live(4 << 30), 25},
		{"store, no overflow", store, live(1 << 62), 25},
		{"store, roots grow the heap too", store, gcpace.Heap{Live: 96 * mib, Roots: 32 * mib}, 50},
		{"role, nothing measured yet: the least goal is the headroom", role, live(0), 3200},
		{"role, a heap of a byte: the least goal is live+headroom", role, live(1), 3200},
		{"role, a heap of a MiB: the least goal is live+headroom", role, live(mib), 3225},
		{"role, the headroom eight times the heap", role, live(16 * mib), 800},
		{"role, rounded up", role, live(16*mib + 1), 800},
		{"role, roots grow the heap too", role, gcpace.Heap{Live: 16 * mib, Roots: 16 * mib}, 400},
		{"role, the headroom the whole heap: the default", role, live(128 * mib), 100},
		{"role, beyond: the default", role, live(1 << 30), 100},
		{"role, no overflow", role, live(1 << 62), 100},
		{"no headroom: the percent", gcpace.Pace{Percent: 50}, live(16 * mib), 50},
		{"the zero pace: Go's default", gcpace.Pace{}, live(16 * mib), 100},
	} {
		pct := tc.pace.GOGC(tc.heap)
		if pct != tc.want {
			t.Errorf("%s: GOGC(%+v) = %d, want %d", tc.name, tc.heap, pct, tc.want)
		}
		if tc.pace.Max != 0 || tc.pace.Headroom == 0 {
			continue
		}
		// The goal the runtime sets (mgcpacer.go): the heap grown by the
		// percent of what it scans, and never below its least goal.
		h, least := tc.heap, uint64(4*mib)*uint64(pct)/100
		if tc.heap.Live < tc.pace.Headroom && least > h.Live+tc.pace.Headroom {
			t.Errorf("%s: the runtime's least heap goal %d MiB is beyond live+headroom", tc.name, least/mib)
		}
		if h.Live < 1<<40 {
			goal := max(h.Live+(h.Live+h.Roots)*uint64(pct)/100, least)
			if goal+4*mib/100 < h.Live+tc.pace.Headroom {
				t.Errorf("%s: a goal of %d MiB leaves less than the headroom", tc.name, goal/mib)
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
		return pct == p.GOGC(gcpace.Measure())
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

// Measure reads what the last collection kept and scanned: a process
// always has a live heap, globals and a stack.
func TestMeasure(t *testing.T) {
	runtime.GC()
	if h := gcpace.Measure(); h.Live == 0 || h.Roots == 0 {
		t.Fatalf("measured %+v after a collection", h)
	}
}
