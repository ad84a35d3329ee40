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
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Pace says how far the heap may grow beyond what the last collection
// kept before the next one: Percent of it, and at least Headroom bytes,
// and at most Max percent of it (none when 0).
type Pace struct {
	Percent  int
	Headroom uint64
	Max      int
}

// GOGC is the percent the pace gives at live bytes of live heap (0 when
// nothing has been measured yet). A Headroom is taken to be under a
// petabyte.
func (p Pace) GOGC(live uint64) int {
	pct := p.Percent
	if p.Headroom > 0 {
		// Rounded up, to leave the whole headroom.
		need := (p.Headroom*100 + live - 1) / max(live, 1)
		if live < p.Headroom {
			// The runtime never lets the heap's goal fall below its
			// minimum, 4 MiB at GOGC 100 and scaled with it: over a
			// heap of a few bytes, the percent that leaves the headroom
			// would put that minimum far beyond it. It is held to
			// live+headroom.
			need = min(need, (live+p.Headroom)*100/heapMinimum)
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
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	before, current := debug.SetGCPercent(p.Percent), p.Percent
	defer debug.SetGCPercent(before)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if pct := p.GOGC(sample[0].Value.Uint64()); pct != current {
				debug.SetGCPercent(pct)
				current = pct
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
