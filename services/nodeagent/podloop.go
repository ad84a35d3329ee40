package nodeagent

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/tracing"
)

// A pod worker's loop acts on signals: a new version of the pod, its
// removal from the node, its configuration's sync period, a reported
// status, its writer's return, the agent's stop. It runs on a goroutine
// only while it has signals to act on: a running pod with nothing to do
// holds none. A host of 100,000 simulated pods held a waiting goroutine
// for each, and their stacks were a quarter of its memory; growing and
// shrinking them, and scanning them at each collection, an eighth of its
// CPU. For the same reason an idle pod holds no context of its own: its
// status writer's is made for each run of the writer, its containers'
// is let go once their Run has returned (as a simulated one does), and
// the agent tells each worker of its stop rather than each worker
// watching the agent's context.

// signal is a set of what a worker's loop has to act on.
type signal uint8

const (
	sigStart   signal = 1 << iota // the pod came: run it
	sigUpdate                     // a new version of the pod
	sigRemove                     // the pod left the node
	sigSync                       // the sync period of its configuration came
	sigStatus                     // a status was reported
	sigWritten                    // the status writer returned
	sigStop                       // the agent stops
)

// podLoop is the loop's own state, touched only by the goroutine that
// runs the loop at the time (one at most: podWorker.active).
type podLoop struct {
	ctx    context.Context
	run    *podRun
	writes statusWrites
}

// signal adds to what the loop has to act on, and starts a goroutine to
// run it unless one runs or the loop has ended.
func (w *podWorker) signal(s signal) {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return
	}
	w.signals |= s
	start := !w.active && w.loop != nil
	w.active = w.active || start
	w.mu.Unlock()
	if start {
		go w.steps()
	}
}

// start marks the pod's arrival in its trace, on the caller's goroutine
// (a tracer's calls run deep, and a new goroutine's stack would grow for
// them), and runs the pod until ctx ends or the pod is gone.
func (w *podWorker) start(ctx context.Context) {
	_, span := tracing.Tracer().Start(bus.WithSpan(ctx, w.trace), "start pod", trace.WithAttributes(
		attribute.String("pod", w.key), attribute.String("node", w.a.cfg.NodeName)))
	span.End()
	l := &podLoop{ctx: ctx}
	l.writes.ended = func() { w.signal(sigWritten) }
	// The loop and its start are set at once: a signal that came between
	// them (the agent's resync removing the pod, its stop) would run the
	// loop before the pod ran.
	w.mu.Lock()
	w.started = time.Now().UTC().Truncate(time.Second)
	w.loop = l
	w.signals |= sigStart
	w.active = true
	w.mu.Unlock()
	go w.steps()
}

// steps runs the loop while it has signals, and returns when it has none
// or the loop ends.
func (w *podWorker) steps() {
	l := w.loop
	for {
		w.mu.Lock()
		sig := w.signals
		w.signals = 0
		if sig == 0 {
			w.active = false
			w.mu.Unlock()
			return
		}
		obj, spec := w.obj, w.spec
		w.mu.Unlock()
		if !l.step(w, sig, obj, spec) {
			w.end()
			return
		}
	}
}

// step acts on sig, the pod's object and spec being as they are now;
// false when the loop ends.
func (l *podLoop) step(w *podWorker, sig signal, obj *object.Object, spec *kinds.PodSpec) bool {
	deleting := obj.Metadata.Deleting()
	if sig&sigStart != 0 {
		l.run = newPodRun(w, obj, spec)
		if !deleting {
			l.run.start(l.ctx)
		}
	}
	switch {
	case deleting:
		w.terminate(l.ctx, l.run.stop, l.run.wait, true)
		w.a.forget(w.key, w)
		return false
	case sig&sigStop != 0:
		// The agent stops; the containers keep running for the next agent.
		l.run.stop()
		l.run.wait()
		return false
	case sig&sigRemove != 0:
		w.terminate(l.ctx, l.run.stop, l.run.wait, false)
		w.a.forget(w.key, w)
		return false
	}
	if sig&sigSync != 0 {
		l.run.start(l.ctx)
		l.run.nextSync()
	}
	if sig&sigWritten != 0 {
		l.writes.returned()
	}
	if sig&(sigStatus|sigWritten) != 0 {
		l.writes.start(bus.WithSpan(l.ctx, w.trace), w)
	}
	return true
}

// end stops what the loop started and marks it ended: later signals go
// unheard, and wait returns.
func (w *podWorker) end() {
	l := w.loop
	l.writes.stop()
	l.writes.wg.Wait()
	l.run.stopSync()
	l.run.stop()
	w.mu.Lock()
	w.ended, w.active = true, false
	w.mu.Unlock()
	w.done.Done()
}

// stop tells the worker its agent stops: the pod's containers keep
// running for the next agent.
func (w *podWorker) stop() { w.signal(sigStop) }
