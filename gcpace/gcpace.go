// Package gcpace paces a process's garbage collector by its live heap.
//
// Go's default (GOGC 100) collects when the heap has grown by as much as
// the last collection kept. A process whose live heap is small collects
// often for that: tens of times a second while it works. A Pace bounds the
// growth allowed between collections from below (Headroom) and from
// above (Max), and Run sets the process's GOGC from its live heap as that
// changes. The runtime's memory limit (GOMEMLIMIT) still applies.
package gcpace

import (
	"cmp"
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Pace says how far the heap may grow beyond what the last collection
// kept before the next one: Percent of it (Go's GOGC, 100 when 0), and
// at least Headroom bytes, and at most Max percent of it (none when 0).
type Pace struct {
	Percent  int
	Headroom uint64
	Max      int
}

// Heap is what the runtime grows the heap by between collections: the
// live heap the last one kept, and the roots it scanned besides
// (goroutine stacks and globals), which GOGC counts too.
type Heap struct {
	Live, Roots uint64
}

// GOGC is the percent the pace gives for h (zero when nothing has been
// measured yet). A Headroom is taken to be under a petabyte.
func (p Pace) GOGC(h Heap) int {
	pct := cmp.Or(p.Percent, 100)
	if p.Headroom > 0 {
		// Rounded up, to leave the whole headroom.
		scanned := h.Live + h.Roots
		need := (p.Headroom*100 + scanned - 1) / max(scanned, 1)
		if h.Live < p.Headroom {
			// The runtime never lets the heap's goal fall below its
			// minimum, 4 MiB at GOGC 100 and scaled with it: over a
			// heap of a few bytes, the percent that leaves the headroom
			// would put that minimum far beyond it. It is held to
			// live+headroom.
			need = min(need, (h.Live+p.Headroom)*100/heapMinimum)
		}
		pct = max(pct, int(need))
	}
	if p.Max > 0 {
		pct = min(pct, p.Max)
	}
	return pct
}

// heapMinimum is the runtime's least heap goal at GOGC 100.
const heapMinimum = 4 << 20

// interval is how often Run looks at the live heap: it changes as fast as
// the process's caches fill, over seconds.
const interval = time.Second

// Run keeps the process's GOGC at p.GOGC of its live heap, looking each
// second, until ctx ends, and puts back the GOGC it found. A GOGC given
// the process in its environment is an experiment's, and stands: Run
// then does nothing.
func Run(ctx context.Context, p Pace) {
	if os.Getenv("GOGC") != "" {
		return
	}
	current := p.GOGC(Heap{})
	before := debug.SetGCPercent(current)
	defer debug.SetGCPercent(before)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if pct := p.GOGC(Measure()); pct != current {
			debug.SetGCPercent(pct)
			current = pct
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Measure reads the process's heap as its last collection left it.
func Measure() Heap {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	metrics.Read(s)
	var v [3]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return Heap{Live: v[0], Roots: v[1] + v[2]}
}
