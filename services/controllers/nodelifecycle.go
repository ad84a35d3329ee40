package controllers

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// nodeLifecycle watches the agents' heartbeat leases. A node whose lease
// lapses (or was not renewed within NodeGrace) becomes Ready=Unknown and
// is tainted unreachable, so nothing new lands there; after EvictAfter its
// pods are deleted so that their owners replace them elsewhere. When the
// heartbeats return, the taints go and the node is Ready again. When every
// node's heartbeat has lapsed at once it evicts nothing (Kubernetes' full
// disruption): that is likelier a fault of what carries the heartbeats (the
// API's node relay, the bus) than of every node.
type nodeLifecycle struct {
	nodes, pods *reconcile.Informer
	events      *reconcile.Recorder
	grace       time.Duration
	evictAfter  time.Duration
	now         func() time.Time
	ctrl        *reconcile.Controller

	mu     sync.RWMutex
	leases map[string]*bus.Lease
	synced bool
	// cover follows the renewals: until when some heartbeat is live, and
	// when the last time none was ended.
	cover coverage
	// registered are the nodes (name → uid) this process has announced
	// with a RegisteredNode event, as Kubernetes' node controller does for
	// each node it starts to follow.
	registered sync.Map
}

// watchLeases keeps the lease view and enqueues the node of each change.
func (c *nodeLifecycle) watchLeases(ctx context.Context, leases *bus.Leases) {
	for ctx.Err() == nil {
		ch, err := leases.Watch(ctx, bus.NodeLeases)
		if err != nil {
			clock.Sleep(ctx, time.Second)
			continue
		}
		live := false // past the watch's replay of the current leases
		for ev := range ch {
			c.mu.Lock()
			if ev.Synced {
				c.synced, live = true, true
				c.mu.Unlock()
				continue
			}
			name := bus.NodeOfLease(ev.Key)
			prev := c.leases[name]
			if ev.Lease == nil {
				delete(c.leases, name)
			} else {
				c.leases[name] = ev.Lease
				c.cover = c.cover.renewed(ev.Lease.Renewed, c.grace, live)
			}
			c.mu.Unlock()
			if !renewal(prev, ev.Lease, c.now(), c.grace) {
				c.ctrl.EnqueueKey(name)
			}
		}
	}
}

// renewal says whether a lease change is its holder renewing it while it
// was live. That needs no reconcile of its own: the node's last reconcile
// asked for another at the old lease's deadline, which reads the lease as
// it is then. With 5,000 nodes, enqueuing each renewal (and its
// reconcile's history) was a sixth of all the store's writes.
func renewal(prev, next *bus.Lease, now time.Time, grace time.Duration) bool {
	return prev != nil && next != nil && prev.Holder == next.Holder &&
		now.Sub(prev.Renewed) < grace && !next.Renewed.Before(prev.Renewed)
}

func (c *nodeLifecycle) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	n, ok := c.nodes.Get(req.Key)
	if !ok {
		c.registered.Delete(req.Key)
		return reconcile.Result{}, nil
	}
	if uid, _ := c.registered.Swap(n.Metadata.Name, n.Metadata.UID); uid != n.Metadata.UID {
		c.events.Event(ctx, n, kinds.EventNormal, "RegisteredNode", "Node %s event: Registered Node %s in Controller", n.Metadata.Name, n.Metadata.Name)
	}
	c.mu.RLock()
	lease, synced, cover := c.leases[n.Metadata.Name], c.synced, c.cover
	c.mu.RUnlock()
	if !synced {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	now := c.now().UTC().Truncate(time.Second)
	if lease != nil {
		if wait := c.grace - now.Sub(lease.Renewed); wait > 0 {
			// Alive: check again when the lease would be too old.
			return reconcile.Result{RequeueAfter: wait + time.Second}, c.markReady(ctx, n, now)
		}
	}
	var st kinds.NodeStatus
	_ = n.DecodeStatus(&st)
	// A node never heard from is given the grace period from its creation.
	if lease == nil && now.Sub(n.Metadata.CreationTimestamp) < c.grace {
		return reconcile.Result{RequeueAfter: c.grace - now.Sub(n.Metadata.CreationTimestamp) + time.Second}, nil
	}
	ready := object.FindCondition(st.Conditions, "Ready")
	if ready == nil || ready.Status == object.ConditionTrue {
		return reconcile.Result{RequeueAfter: time.Second}, c.markUnreachable(ctx, n, now)
	}
	// A node still silent after every node was gives its agent the whole
	// timeout from then, not from its own lapse, to come back.
	if wait := c.evictAfter - now.Sub(latest(ready.LastTransitionTime, cover.silenceEnded)); wait > 0 {
		return reconcile.Result{RequeueAfter: wait + time.Second}, nil
	}
	if cover.silent(now) {
		c.events.Event(ctx, n, kinds.EventWarning, "EvictionHeld",
			"Every node stopped posting heartbeats at once: evicting nothing until one posts again, as the fault is likelier the control plane's")
		return reconcile.Result{RequeueAfter: c.grace}, nil
	}
	return reconcile.Result{}, c.evict(ctx, n)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// coverage follows the nodes' renewals in the order the watch delivers
// them, so that a time when every heartbeat had lapsed is seen however
// short, without looking at every node.
type coverage struct {
	// until is the latest renewal plus the grace: no heartbeat is live
	// from then on, unless renewed.
	until time.Time
	// silenceEnded is the renewal that ended the last time no heartbeat
	// was live.
	silenceEnded time.Time
}

// renewed takes a renewal at r into account. A renewal after until ends a
// silence, unless it comes in a watch's replay of the current leases,
// which holds each node's last renewal alone and so shows gaps that were
// not there.
func (c coverage) renewed(r time.Time, grace time.Duration, live bool) coverage {
	if live && !c.until.IsZero() && r.After(c.until) {
		c.silenceEnded = r
	}
	if end := r.Add(grace); end.After(c.until) {
		c.until = end
	}
	return c
}

// silent says whether no heartbeat is live at now.
func (c coverage) silent(now time.Time) bool { return !now.Before(c.until) }

var lifecycleTaints = []kinds.Taint{
	{Key: kinds.TaintUnreachable, Effect: kinds.NoSchedule},
	{Key: kinds.TaintUnreachable, Effect: kinds.NoExecute},
}

func (c *nodeLifecycle) markUnreachable(ctx context.Context, n *object.Object, now time.Time) error {
	var spec kinds.NodeSpec
	var st kinds.NodeStatus
	_ = n.DecodeSpec(&spec)
	_ = n.DecodeStatus(&st)
	for _, t := range lifecycleTaints {
		if !hasTaint(spec.Taints, t) {
			t.TimeAdded = now.Format(time.RFC3339)
			spec.Taints = append(spec.Taints, t)
		}
	}
	object.SetCondition(&st.Conditions, object.Condition{Type: "Ready", Status: object.ConditionUnknown,
		Reason: "NodeStatusUnknown", Message: "The node agent stopped posting heartbeats."}, now)
	next := n.Clone()
	if err := next.SetSpec(spec); err != nil {
		return err
	}
	if err := next.SetStatus(st); err != nil {
		return err
	}
	if _, err := c.nodes.Store().Update(ctx, next, bus.UpdateOptions{Current: n}); err != nil {
		return err
	}
	c.events.Event(ctx, n, kinds.EventWarning, "NodeNotReady", "Node %s stopped posting heartbeats; tainted unreachable, pods evicted after %s",
		n.Metadata.Name, c.evictAfter)
	return nil
}

func (c *nodeLifecycle) markReady(ctx context.Context, n *object.Object, now time.Time) error {
	var spec kinds.NodeSpec
	var st kinds.NodeStatus
	_ = n.DecodeSpec(&spec)
	_ = n.DecodeStatus(&st)
	kept := spec.Taints[:0]
	for _, t := range spec.Taints {
		if t.Key != kinds.TaintUnreachable && t.Key != kinds.TaintNotReady {
			kept = append(kept, t)
		}
	}
	ready := object.FindCondition(st.Conditions, "Ready")
	if len(kept) == len(spec.Taints) && ready != nil && ready.Status == object.ConditionTrue {
		return nil
	}
	spec.Taints = kept
	object.SetCondition(&st.Conditions, object.Condition{Type: "Ready", Status: object.ConditionTrue,
		Reason: "AgentReady", Message: "node agent is posting ready status"}, now)
	next := n.Clone()
	if err := next.SetSpec(spec); err != nil {
		return err
	}
	if err := next.SetStatus(st); err != nil {
		return err
	}
	_, err := c.nodes.Store().Update(ctx, next, bus.UpdateOptions{Current: n})
	if err == nil {
		c.events.Event(ctx, n, kinds.EventNormal, "NodeReady", "Node %s is posting heartbeats again", n.Metadata.Name)
	}
	return err
}

// evict deletes the pods of an unreachable node, except those that
// tolerate being there (daemons).
func (c *nodeLifecycle) evict(ctx context.Context, n *object.Object) error {
	var errs []error
	for _, o := range c.pods.ByIndex(byNode, n.Metadata.Name) {
		p, err := kinds.DecodePod(o)
		if err != nil {
			continue
		}
		if kinds.Tolerated(kinds.Taint{Key: kinds.TaintUnreachable, Effect: kinds.NoExecute}, p.Spec.Tolerations) {
			continue
		}
		if err := forceDeletePod(ctx, c.pods.Store(), o); err != nil {
			errs = append(errs, err)
			continue
		}
		c.events.Event(ctx, o, kinds.EventWarning, "NodeUnreachableEviction", "Evicted from unreachable node %s", n.Metadata.Name)
	}
	return errors.Join(errs...)
}

func hasTaint(ts []kinds.Taint, t kinds.Taint) bool {
	for _, x := range ts {
		if x.Key == t.Key && x.Effect == t.Effect {
			return true
		}
	}
	return false
}
