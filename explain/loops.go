package explain

import (
	"fmt"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// Loop is where one loop stands with one object.
type Loop struct {
	// Controller names the loop: a controller's queue, the scheduler, a
	// node's agent.
	Controller string `json:"controller"`
	Object     Ref    `json:"object"`
	// State is one of the State constants.
	State string `json:"state"`
	// Since is when the state began: queued, in flight, unschedulable.
	Since *time.Time `json:"since,omitempty"`
	// Worker is the process that holds the key, when it is known.
	Worker    string     `json:"worker,omitempty"`
	Attempt   uint64     `json:"attempt,omitempty"`
	NextRetry *time.Time `json:"nextRetry,omitempty"`
	LastError string     `json:"lastError,omitempty"`
	// Last is the latest reconcile that ended.
	Last *reconcile.HistoryEntry `json:"lastReconcile,omitempty"`
	// TraceID is the trace of the latest reconcile.
	TraceID string `json:"traceID,omitempty"`
	// Message says more, for the loops that keep no queue.
	Message string `json:"message,omitempty"`
}

// States of a loop for one key.
const (
	// StateQueued: the key waits in the loop's queue.
	StateQueued = "Queued"
	// StateInFlight: a worker is reconciling it.
	StateInFlight = "InFlight"
	// StateBackingOff: it failed and waits to be tried again.
	StateBackingOff = "BackingOff"
	// StateFailed: it failed in a way retrying cannot fix, and waits for
	// the object to change.
	StateFailed = "Failed"
	// StateIdle: nothing to do until something changes.
	StateIdle = "Idle"
	// StateRequeued: its last reconcile asked to run again at a time
	// (NextRetry) that has not come.
	StateRequeued = "Requeued"
	// StateWaiting: a loop without a queue (the scheduler, an agent)
	// waits on the cluster.
	StateWaiting = "Waiting"
)

// LoopParts is what the store holds of one controller and one key: what
// its queue holds, its retry record, and its latest reconciles.
type LoopParts struct {
	Controller string
	Object     Ref
	Queued     *bus.QueueEntry
	Retry      *reconcile.RetryRecord
	// History are the controller's latest reconciles of the key, oldest
	// first.
	History []reconcile.HistoryEntry
}

// StateOf says where a controller stands with a key: a reconcile still
// marked in progress is in flight on its worker; a retry record says it
// backs off (or failed for good); a queued key waits, or is with a worker
// once delivered; otherwise it is idle since its last reconcile.
func StateOf(p LoopParts, now time.Time) Loop {
	l := Loop{Controller: p.Controller, Object: p.Object, State: StateIdle}
	if n := len(p.History); n > 0 {
		latest := p.History[n-1]
		l.TraceID = latest.TraceID
		for i := n - 1; i >= 0; i-- {
			if p.History[i].Outcome != reconcile.OutcomeInProgress {
				e := p.History[i]
				l.Last = &e
				break
			}
		}
		if latest.Outcome == reconcile.OutcomeInProgress {
			t := latest.Time
			l.State, l.Since, l.Worker, l.Attempt = StateInFlight, &t, latest.Worker, latest.Attempt
			return l
		}
	}
	if r := p.Retry; r != nil {
		l.Attempt, l.LastError = r.Attempts, r.LastError
		if r.TraceID != "" {
			l.TraceID = r.TraceID
		}
		switch {
		case r.Terminal:
			l.State = StateFailed
			return l
		case r.NextRetry != nil && r.NextRetry.After(now):
			t := *r.NextRetry
			l.State, l.NextRetry = StateBackingOff, &t
			return l
		}
	}
	if q := p.Queued; q != nil {
		t := q.Since
		l.State, l.Since = StateQueued, &t
		if at, ok := requeuedUntil(l.Last); q.Delivered && ok && at.After(now) {
			l.State, l.NextRetry = StateRequeued, &at
			return l
		}
		if q.Delivered {
			l.State = StateInFlight
			if r := p.Retry; r != nil && r.NextRetry != nil && r.NextRetry.After(t) {
				t = *r.NextRetry // handed back after its last failure
				l.Since = &t
			}
		}
	}
	return l
}

// requeuedUntil is when a reconcile that asked to run again is due.
func requeuedUntil(e *reconcile.HistoryEntry) (time.Time, bool) {
	if e == nil || e.RequeueAfter == "" {
		return time.Time{}, false
	}
	d, err := time.ParseDuration(e.RequeueAfter)
	if err != nil {
		return time.Time{}, false
	}
	return e.Time.Add(time.Duration(e.DurationMS*float64(time.Millisecond)) + d), true
}

// loops lists where the loops stand with the root, what lies between it
// and its causes, and the first object of each cause; for a pod, the
// scheduler or its node's agent.
func (w *walk) loops(e *Explanation) []Loop {
	var out []Loop
	seen := map[string]bool{}
	add := func(uid string, n *Node) {
		if seen[uid] {
			return
		}
		seen[uid] = true
		out = append(out, w.in.Loops[uid]...)
		if n != nil && n.Kind == "Pod" {
			if o := w.object(uid); o != nil {
				if l, ok := w.podLoop(o); ok {
					out = append(out, l)
				}
			}
		}
	}
	var visit func(n *Node)
	visit = func(n *Node) {
		if n.OnRootCause || n.Health != Healthy || len(n.Children) > 0 {
			add(n.UID, n)
		}
		for _, c := range n.Children {
			if c.Health != Healthy || c.OnRootCause || len(c.Children) > 0 {
				visit(c)
			}
		}
	}
	add(e.Tree.UID, e.Tree)
	visit(e.Tree)
	return out
}

func (w *walk) object(uid string) *object.Object {
	if w.in.Root.Metadata.UID == uid {
		return w.in.Root
	}
	for _, o := range w.in.Objects {
		if o.Metadata.UID == uid {
			return o
		}
	}
	return nil
}

// podLoop is where the scheduler (for a pod not bound) or its node's
// agent stands with a pod that is not running well.
func (w *walk) podLoop(o *object.Object) (Loop, bool) {
	p, err := w.pod(o)
	if err != nil || p.Terminal() {
		return Loop{}, false
	}
	l := Loop{Object: RefOf(o), State: StateWaiting}
	if p.Spec.NodeName == "" {
		l.Controller = "scheduler"
		c := condition(p.Status.Conditions, kinds.PodScheduled)
		if c == nil || c.Status != object.ConditionFalse {
			l.State, l.Message = StateQueued, "waiting for its turn"
			return l, true
		}
		t := c.LastTransitionTime
		l.Since = &t
		l.Message = "unschedulable; tried again with backoff (1s doubling to 60s), and at once when a node or a pod changes"
		for _, ev := range w.in.Events[o.Metadata.UID] {
			if ev.Reason == "FailedScheduling" {
				l.Attempt = uint64(ev.Count)
				l.Message += fmt.Sprintf(" (tried %d times)", ev.Count)
			}
		}
		return l, true
	}
	l.Controller = "agent of node " + p.Spec.NodeName
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil {
			l.Message = fmt.Sprintf("container %s waits: %s", cs.Name, cs.State.Waiting.Reason)
			if cs.State.Waiting.Reason == ReasonCrashLoop {
				l.State, l.Attempt = StateBackingOff, uint64(cs.RestartCount)+1
				l.Message += " (restarted after 10s doubling to 5m)"
			}
			return l, true
		}
	}
	l.State, l.Message = StateIdle, "running its containers"
	return l, true
}
