package nodeagent

import (
	"context"
	"sync"
)

// hostWrites bounds the pod writes a host of simulated nodes has in flight.
const hostWrites = 256

// pacer holds a host's pod writes to a number in flight, made by as many
// long-lived workers from a queue. Its simulated pods do not outlive it,
// so on start every node runs its pods again and writes their status:
// 100,000 writes sent at once timed out against the bus, and took the
// nodes' heartbeats and everyone's reads with them. Heartbeats do not
// pass through it. The workers, not the pods' goroutines, make the whole
// write, from decoding and encoding the status to the answer: that runs
// deep, and tens of thousands of mostly idle pod goroutines grew their
// stacks for it (a third of the host's CPU went to allocating, copying
// and scanning stacks). A write waits as a queued func, not as a
// goroutine: while the store lagged the scheduler's binds, 35,000 status
// writers waited for a worker with 180 MB of stacks between them.
type pacer struct {
	mu    sync.Mutex
	ready sync.Cond // signalled as jobs come, broadcast at the stop
	// jobs is the queue, oldest first; nil once drained, so that a
	// burst's backing array goes with it.
	jobs    []func()
	stopped bool
}

// startPacer starts n workers, which end with ctx once they have run
// every job queued before it ended.
func startPacer(ctx context.Context, wg *sync.WaitGroup, n int) *pacer {
	p := &pacer{}
	p.ready.L = &p.mu
	context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		p.ready.Broadcast()
	})
	for range n {
		wg.Go(func() {
			for job := p.next(); job != nil; job = p.next() {
				job()
			}
		})
	}
	return p
}

// next waits for the oldest job and takes it; nil once the pacer has
// stopped and its queue is drained.
func (p *pacer) next() func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.jobs) == 0 {
		if p.stopped {
			return nil
		}
		p.ready.Wait()
	}
	job := p.jobs[0]
	p.jobs[0] = nil
	p.jobs = p.jobs[1:]
	if len(p.jobs) == 0 {
		p.jobs = nil
	}
	return job
}

// Go queues fn for a worker and returns at once. Once the pacer has
// stopped, fn runs on a goroutine of its own: its caller, which owns it,
// may be waiting for it to end.
func (p *pacer) Go(fn func()) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		go fn()
		return
	}
	p.jobs = append(p.jobs, fn)
	p.mu.Unlock()
	p.ready.Signal()
}
