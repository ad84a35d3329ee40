package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// replicaSets keeps each ReplicaSet's pod count at spec.replicas.
//
// Its pods are named <replicaset>-<slot> with slots 0…replicas-1, created
// only if absent. Two reconciles of one ReplicaSet at once (which the work
// queue allows) therefore choose the same names and cannot make more pods
// than there are slots; a replacement takes the slot of the pod it
// replaces once that pod is gone.
type replicaSets struct {
	rs, pods *reconcile.Informer
	events   *reconcile.Recorder
	now      func() time.Time
}

func (c *replicaSets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o, ok := c.rs.Get(req.Key)
	if !ok || o.Metadata.Deleting() {
		return reconcile.Result{}, nil
	}
	var spec kinds.ReplicaSetSpec
	if err := o.DecodeSpec(&spec); err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	sel, err := spec.Selector.Selector()
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	pods, err := claim(ctx, c.pods, o, sel)
	if err != nil {
		return reconcile.Result{}, err
	}
	want := kinds.Int32(spec.Replicas, 1)
	if o, err = c.raiseSlots(ctx, o, want); err != nil {
		return reconcile.Result{}, fmt.Errorf("raising the slot bound: %w", err)
	}
	pass, manageErr := c.manage(ctx, o, spec, pods, want)
	bound, settled := slotsOf(o), false
	if manageErr == nil {
		bound, settled = c.settle(ctx, o, pods, pass, want)
	}
	requeue, err := c.writeStatus(ctx, o, spec, pods, rsOutcome{pass: pass, err: manageErr, bound: bound, settled: settled})
	if manageErr != nil {
		return reconcile.Result{}, manageErr
	}
	if err == nil && !settled {
		// A slot could not be fenced yet (a pod the cache has not shown):
		// look again soon, as the Deployment waits on it.
		requeue = settleRetry
	}
	return reconcile.Result{RequeueAfter: requeue}, err
}

// settleRetry is how soon an unsettled ReplicaSet is looked at again.
const settleRetry = 200 * time.Millisecond

// slotName is the name of the pod in slot i.
func slotName(rs string, i int32) string { return truncName(rs, "-"+strconv.Itoa(int(i))) }

func (c *replicaSets) manage(ctx context.Context, o *object.Object, spec kinds.ReplicaSetSpec, pods []*kinds.Pod, want int32) (passResult, error) {
	pass := passResult{made: map[string]bool{}, deleted: map[string]bool{}}
	gen := o.Metadata.Generation
	var active []*kinds.Pod
	var errs []error
	for _, p := range pods {
		switch {
		case p.Terminal() && !p.Metadata.Deleting():
			// A finished pod holds its slot; free it for a replacement.
			errs = append(errs, deleteFenced(ctx, c.pods.Store(), p.Object, gen))
			pass.deleted[p.Metadata.Name] = true
		case p.Active():
			active = append(active, p)
		}
	}
	diff := int(want) - len(active)
	switch {
	case diff > 0:
		maker, err := newPodMaker(o, spec.Template, o.Metadata.Namespace, nil)
		if err != nil {
			return pass, err
		}
		// Built only here: most passes of a large ReplicaSet create
		// nothing, and a map of every pod's name was a tenth of their CPU.
		free := &freeSlots{rs: o.Metadata.Name, want: want, taken: podNames(pods), maker: maker}
		errs = append(errs, c.createPods(ctx, o, diff, free, pass.made))
	case diff < 0:
		for _, p := range deletionOrder(active, o.Metadata.Name, want)[:-diff] {
			if err := deleteFenced(ctx, c.pods.Store(), p.Object, gen); err != nil {
				errs = append(errs, err)
				continue
			}
			pass.deleted[p.Metadata.Name] = true
			c.events.Event(ctx, o, kinds.EventNormal, "SuccessfulDelete", "Deleted pod: %s", p.Metadata.Name)
		}
	}
	return pass, errors.Join(errs...)
}

// Pods are created in batches that double, as Kubernetes' slow start
// does, so that a failing create (a fenced slot, the bus unavailable)
// costs one batch of attempts, not thousands; each batch is pipelined.
// Kubernetes starts from one pod, which cost a ReplicaSet of ten four
// round trips in a row, each behind the store's answer to the last; from
// slowStartBatch, a small ReplicaSet's pods go in one.
const (
	slowStartBatch = 16
	maxCreateBatch = 500
)

// createBatches are the sizes of the batches n pods are created in.
func createBatches(n int) []int {
	var sizes []int
	for batch := slowStartBatch; n > 0; batch = min(batch*2, maxCreateBatch) {
		size := min(batch, n)
		sizes = append(sizes, size)
		n -= size
	}
	return sizes
}

// freeSlots hands out the pods of a ReplicaSet's free slots below want,
// in slot order, as many at a time as asked: each batch's pods are built
// as it is created, since a ReplicaSet of 100,000 held every pod it was
// about to create, about 100 MB, until the last was.
type freeSlots struct {
	rs         string
	want, next int32
	taken      map[string]bool
	maker      *podMaker
}

// take is the pods of the next n free slots, fewer when fewer are left.
func (f *freeSlots) take(n int) []*object.Object {
	var out []*object.Object
	for ; f.next < f.want && len(out) < n; f.next++ {
		if name := slotName(f.rs, f.next); !f.taken[name] {
			out = append(out, f.maker.pod(name))
		}
	}
	return out
}

// createPods creates the pods of n free slots in batches (createBatches),
// and stops at the first batch with a failure. Each is created on the
// authority of the ReplicaSet's generation, so that a slot fenced since
// (by a later generation) refuses it; a refusal means this pass is stale,
// and the retry sees the newer spec.
func (c *replicaSets) createPods(ctx context.Context, o *object.Object, n int, free *freeSlots, taken map[string]bool) error {
	opts := bus.CreateOptions{Authority: &bus.Authority{Owner: o.Metadata.UID, Generation: o.Metadata.Generation}}
	for _, size := range createBatches(n) {
		pods := free.take(size)
		if len(pods) == 0 {
			return nil
		}
		_, errs := c.pods.Store().CreateMany(ctx, pods, opts)
		lastMade := ""
		var failed error
		for i, err := range errs {
			name := pods[i].Metadata.Name
			switch {
			case err == nil:
				lastMade = name
				taken[name] = true
			case errors.Is(err, bus.ErrAlreadyExists):
				taken[name] = true
			case errors.Is(err, bus.ErrFenced):
				failed = err
			default:
				failed = err
				c.events.Event(ctx, o, kinds.EventWarning, "FailedCreate", "Error creating pod %s: %v", name, err)
			}
		}
		if lastMade != "" {
			c.events.Event(ctx, o, kinds.EventNormal, "SuccessfulCreate", "Created pod: %s", lastMade)
		}
		if failed != nil {
			return failed
		}
	}
	return nil
}

// deletionOrder ranks pods for scale-down: those outside the slots first
// (so the remaining pods keep the slot invariant), then unscheduled before
// scheduled, pending before running, not ready before ready, fewer restarts
// kept, newer before older.
func deletionOrder(pods []*kinds.Pod, rs string, want int32) []*kinds.Pod {
	inSlots := map[string]bool{}
	for i := int32(0); i < want; i++ {
		inSlots[slotName(rs, i)] = true
	}
	out := append([]*kinds.Pod(nil), pods...)
	rank := func(p *kinds.Pod) [5]int {
		b := func(x bool) int {
			if x {
				return 1
			}
			return 0
		}
		return [5]int{b(inSlots[p.Metadata.Name]), b(p.Spec.NodeName != ""), b(p.Status.Phase == kinds.PodRunning), b(p.Ready()), 0}
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			for k := range ri {
				if ri[k] != rj[k] {
					return ri[k] < rj[k]
				}
			}
		}
		if out[i].Restarts() != out[j].Restarts() {
			return out[i].Restarts() > out[j].Restarts()
		}
		if !out[i].Metadata.CreationTimestamp.Equal(out[j].Metadata.CreationTimestamp) {
			return out[i].Metadata.CreationTimestamp.After(out[j].Metadata.CreationTimestamp)
		}
		return out[i].Metadata.Name < out[j].Metadata.Name
	})
	return out
}

// rsOutcome is what a reconcile did, for its status.
type rsOutcome struct {
	pass    passResult
	err     error
	bound   int32
	settled bool
}

// writeStatus counts the pods (those this pass created and not those it
// deleted, which the cache does not show yet), records the slot bound and
// says when to look again for a pod that becomes available after
// minReadySeconds.
func (c *replicaSets) writeStatus(ctx context.Context, o *object.Object, spec kinds.ReplicaSetSpec, pods []*kinds.Pod, out rsOutcome) (time.Duration, error) {
	var status kinds.ReplicaSetStatus
	_ = o.DecodeStatus(&status)
	now := c.now()
	minReady := time.Duration(spec.MinReadySeconds) * time.Second
	// Claimed pods match the selector, so when it asks for every label
	// of the template they are all fully labeled, unasked.
	labeled := spec.Selector.Requires(spec.Template.Metadata.Labels)
	sel := object.SelectorFromSet(spec.Template.Metadata.Labels)
	next := time.Duration(0)
	st := kinds.ReplicaSetStatus{ObservedGeneration: o.Metadata.Generation, Conditions: status.Conditions}
	for _, p := range pods {
		if p.Metadata.Deleting() || p.Terminal() || out.pass.deleted[p.Metadata.Name] {
			continue
		}
		st.Replicas++
		if labeled || sel.Matches(p.Metadata.Labels) {
			st.FullyLabeledReplicas++
		}
		if since, ok := p.ReadySince(); ok {
			st.ReadyReplicas++
			if wait := since.Add(minReady).Sub(now); wait <= 0 {
				st.AvailableReplicas++
			} else {
				next = sooner(next, wait)
			}
		}
	}
	if len(out.pass.made) > 0 {
		seen := podNames(pods)
		for name := range out.pass.made {
			if !seen[name] {
				st.Replicas++
				st.FullyLabeledReplicas++
			}
		}
	}
	if out.err != nil {
		object.SetCondition(&st.Conditions, object.Condition{Type: "ReplicaFailure", Status: object.ConditionTrue,
			Reason: "FailedCreate", Message: out.err.Error()}, now)
	} else if cond := object.FindCondition(st.Conditions, "ReplicaFailure"); cond != nil {
		st.Conditions = removeCondition(st.Conditions, "ReplicaFailure")
	}
	settled := int64(0)
	if out.settled {
		settled = o.Metadata.Generation
	}
	n := withSlots(o, out.bound, settled)
	n.Status = mustJSON(st)
	if _, err := c.rs.Store().Update(ctx, n, bus.UpdateOptions{Current: o}); err != nil {
		return 0, fmt.Errorf("status: %w", err)
	}
	return next, nil
}

// podNames is the set of the pods' names.
func podNames(pods []*kinds.Pod) map[string]bool {
	names := make(map[string]bool, len(pods))
	for _, p := range pods {
		names[p.Metadata.Name] = true
	}
	return names
}

func removeCondition(conds []object.Condition, t string) []object.Condition {
	out := conds[:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
