package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// router keeps the per-node pod index from the scheduler's watch of every
// pod. It writes only what an agent acts on — a pod arriving on or leaving
// a node, its spec, its deletion — not status changes, which agents make
// themselves. Only the leader writes; on taking the lead it writes every
// bound pod once, so nothing a failed leader missed stays missing.
type router struct {
	index *bus.NodePods
	log   *slog.Logger

	mu      sync.Mutex
	active  bool
	pending []bus.NodePodChange
	kick    chan struct{}
}

func newRouter(index *bus.NodePods, log *slog.Logger) *router {
	return &router{index: index, log: log, kick: make(chan struct{}, 1)}
}

func nodeOf(o *object.Object) string {
	if o == nil {
		return ""
	}
	var spec struct {
		NodeName string `json:"nodeName"`
	}
	_ = o.DecodeSpec(&spec)
	return spec.NodeName
}

// agentView is the part of a pod an agent acts on.
func agentView(o *object.Object) string {
	if o == nil {
		return ""
	}
	dt := ""
	if o.Metadata.DeletionTimestamp != nil {
		dt = o.Metadata.DeletionTimestamp.String()
	}
	return o.Metadata.UID + "|" + dt + "|" + string(o.Spec)
}

func (r *router) change(ch reconcile.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active {
		return
	}
	oldNode, newNode := nodeOf(ch.Old), nodeOf(ch.New)
	key := ch.Object().Key()
	if oldNode != "" && oldNode != newNode {
		r.pending = append(r.pending, bus.NodePodChange{Node: oldNode, Key: key})
	}
	if newNode != "" && (newNode != oldNode || agentView(ch.Old) != agentView(ch.New)) {
		// The agent continues the trace of the write (the bind, usually).
		r.pending = append(r.pending, bus.NodePodChange{Node: newNode, Key: key, Pod: ch.New, Trace: ch.Trace})
	}
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
		if n := nodeOf(o); n != "" {
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
	if err := r.index.Publish(ctx, batch); err != nil {
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
