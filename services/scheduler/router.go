package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// router keeps the per-node pod index from the scheduler's watch of every
// pod. It writes only what an agent acts on — a pod arriving on or leaving
// a node, its spec, its deletion — not status changes, which agents make
// themselves. Only the leader writes; on taking the lead it writes every
// bound pod once, so nothing a failed leader missed stays missing.
//
// A node whose agent derives its pods from the store (kinds.DerivesPods)
// gets no entries but removals: a bind then costs one write, not two.
// Removals are still written, so that should the node turn to the index
// (an agent of another kind taking its name), the entries it finds there
// are the pods it still has, once nodeChanged has written those.
type router struct {
	index *bus.NodePods
	log   *slog.Logger
	// derived reports a node whose agent needs no index entries.
	derived func(node string) bool
	// read reads a pod as stored, for one the cache holds lean.
	read func(ctx context.Context, key string) (*object.Object, error)

	mu      sync.Mutex
	active  bool
	pending []bus.NodePodChange
	kick    chan struct{}
}

func newRouter(index *bus.NodePods, derived func(node string) bool,
	read func(ctx context.Context, key string) (*object.Object, error), log *slog.Logger) *router {
	return &router{index: index, derived: derived, read: read, log: log, kick: make(chan struct{}, 1)}
}

func (r *router) change(ch reconcile.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active {
		return
	}
	// The agent continues the trace of the write (the bind, usually).
	c := bus.PodChange{Old: ch.Old, New: ch.New, OldNode: podNode(ch.OldValue), NewNode: podNode(ch.NewValue), Trace: ch.Trace}
	r.add(c.IndexChanges(func(node string) bool { return !r.derived(node) }))
}

// podNode is the node of a pod as the scheduler's informer decoded it.
func podNode(v any) string {
	if p, ok := v.(*kinds.Pod); ok {
		return p.Spec.NodeName
	}
	return ""
}

// nodeChanged writes the pods of a node that has come to read the index:
// one registered anew, or whose agent no longer derives its pods.
func (r *router) nodeChanged(ch reconcile.Change, bound func(node string) []*object.Object) {
	if ch.New == nil || kinds.DerivesPods(ch.New) || (ch.Old != nil && !kinds.DerivesPods(ch.Old)) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active {
		return
	}
	var batch []bus.NodePodChange
	for _, o := range bound(ch.New.Metadata.Name) {
		batch = append(batch, bus.NodePodChange{Node: ch.New.Metadata.Name, Key: o.Key(), Pod: o})
	}
	r.add(batch)
}

// add queues changes for the next flush; r.mu is held.
func (r *router) add(changes []bus.NodePodChange) {
	if len(changes) == 0 {
		return
	}
	r.pending = append(r.pending, changes...)
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run publishes index changes while leading.
func (r *router) run(ctx context.Context, pods *reconcile.Informer) {
	r.mu.Lock()
	r.active = true
	for _, o := range pods.List() {
		if n := kinds.BoundNode(o); n != "" && !r.derived(n) {
			r.pending = append(r.pending, bus.NodePodChange{Node: n, Key: o.Key(), Pod: o})
		}
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.active = false
		r.pending = nil
		r.mu.Unlock()
	}()
	r.flush(ctx)
	for {
		select {
		case <-ctx.Done():
			r.flush(context.WithoutCancel(ctx))
			return
		case <-r.kick:
		}
		r.flush(ctx)
	}
}

func (r *router) flush(ctx context.Context) {
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	whole, err := r.whole(ctx, batch)
	if err == nil {
		err = r.index.Publish(ctx, whole)
	}
	if err != nil {
		r.log.Warn("node pod index write failed", "err", err)
		// Try them all again: index writes are idempotent.
		r.mu.Lock()
		r.pending = append(batch, r.pending...)
		r.mu.Unlock()
		clock.Sleep(ctx, time.Second)
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// whole is batch with the pods the cache holds lean (kinds.IsPhaseOnly)
// read as stored: an agent writes its status over its entry, so an entry
// holds the whole pod. A pod gone, or bound elsewhere since, is left out:
// its watch brings the change that says so. So is one that cannot be read
// for a reason of its own (a corrupt value, which the informer reports):
// only a bus that does not answer fails the batch, to be tried again, so
// that one pod never holds up every node's entries.
func (r *router) whole(ctx context.Context, batch []bus.NodePodChange) ([]bus.NodePodChange, error) {
	var out []bus.NodePodChange
	for i, ch := range batch {
		if ch.Pod == nil || !kinds.IsPhaseOnly(ch.Pod) {
			if out != nil {
				out = append(out, ch)
			}
			continue
		}
		if out == nil {
			out = append(make([]bus.NodePodChange, 0, len(batch)), batch[:i]...)
		}
		cur, err := r.read(ctx, ch.Key)
		switch {
		case errors.Is(err, bus.ErrNotFound):
			continue
		case ctx.Err() != nil || errors.Is(err, bus.ErrUnavailable):
			return nil, err
		case err != nil:
			r.log.Warn("node pod index: a pod left out, as it cannot be read", "pod", ch.Key, "err", err)
			continue
		}
		if cur.Metadata.UID == ch.Pod.Metadata.UID && kinds.BoundNode(cur) == ch.Node {
			ch.Pod = cur
			out = append(out, ch)
		}
	}
	if out == nil {
		return batch, nil
	}
	return out, nil
}
