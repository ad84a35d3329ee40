package controllers

import (
	"context"
	"errors"
	"strconv"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// A ReplicaSet's pods live in slots (<name>-0, -1, …), and a reconcile
// working from an older generation of its spec (a lost acknowledgement, a
// stalled connection, another process) may still create pods in slots the
// ReplicaSet has since given up. So that the Deployment never counts too
// few pods, and never surges past its bound, a ReplicaSet records two
// annotations:
//
//   - slots: pods may exist only in slots below it. It is raised, by
//     compare-and-swap on the ReplicaSet, before any pod is created at or
//     above it (the Deployment raises it in the write that scales up).
//   - settled: the generation at which the controller last made sure no
//     earlier generation can add a pod: every slot below the bound that
//     it did not fill holds a fence (see bus.Fence) or a pod being deleted
//     with one. Then status.replicas, written in the same update, bounds
//     the pods until the spec changes again.
//
// Until a ReplicaSet is settled at its generation, the Deployment counts
// every slot below the bound as a pod (rsView.mayHave).
const (
	AnnotationSlots   = "replicaset.homeostat.io/slots"
	AnnotationSettled = "replicaset.homeostat.io/settled"
)

func slotsOf(o *object.Object) int32 {
	n, _ := strconv.ParseInt(o.Metadata.Annotations[AnnotationSlots], 10, 32)
	return int32(n)
}

func settledOf(o *object.Object) int64 {
	n, _ := strconv.ParseInt(o.Metadata.Annotations[AnnotationSettled], 10, 64)
	return n
}

// withSlots is a copy of o whose annotations say slots and settled
// (settled 0 leaves the annotation as it is).
func withSlots(o *object.Object, slots int32, settled int64) *object.Object {
	n := o.Clone() // annotations included
	if n.Metadata.Annotations == nil {
		n.Metadata.Annotations = map[string]string{}
	}
	n.Metadata.Annotations[AnnotationSlots] = strconv.Itoa(int(slots))
	if settled > 0 {
		n.Metadata.Annotations[AnnotationSettled] = strconv.FormatInt(settled, 10)
	}
	return n
}

// boundOf is how many pods a ReplicaSet may have now: its spec, the pods
// its status counted, and, unless it is settled at its generation, every
// slot below its bound.
func boundOf(o *object.Object, spec, counted int32) int32 {
	n := max(spec, counted)
	if settledOf(o) != o.Metadata.Generation {
		n = max(n, slotsOf(o))
	}
	return n
}

// raiseSlots makes the slot bound cover want before any pod is created
// there; a conflict means the reconcile works from a stale ReplicaSet.
func (c *replicaSets) raiseSlots(ctx context.Context, o *object.Object, want int32) (*object.Object, error) {
	if slotsOf(o) >= want {
		return o, nil
	}
	return c.rs.Store().Update(ctx, withSlots(o, want, 0), bus.UpdateOptions{Current: o})
}

// passResult is what one pass of manage did, which the cache cannot show yet.
type passResult struct {
	made    map[string]bool // pods created (or found taken)
	deleted map[string]bool // pods deleted, fenced at this generation
}

// settle fences every slot below the bound that holds no live pod and that
// this pass did not fill, and returns the bound lowered to one past the
// highest live slot (at least want) and whether every slot is fenced.
func (c *replicaSets) settle(ctx context.Context, o *object.Object, pods []*kinds.Pod, pass passResult, want int32) (int32, bool) {
	gen := o.Metadata.Generation
	bound := slotsOf(o)
	if settledOf(o) == gen {
		return bound, true
	}
	byName := make(map[string]*kinds.Pod, len(pods))
	for _, p := range pods {
		byName[p.Metadata.Name] = p
	}
	top, ok := want, true
	for i := int32(0); i < bound; i++ {
		name := slotName(o.Metadata.Name, i)
		p := byName[name]
		switch {
		case pass.made[name] || (p != nil && p.Active() && !pass.deleted[name]):
			top = max(top, i+1)
		case pass.deleted[name]:
		default:
			live, fenced := c.fenceSlot(ctx, o, name, p)
			if live {
				top = max(top, i+1)
			}
			ok = ok && fenced
		}
	}
	if !ok {
		return bound, false
	}
	return top, true
}

// fenceSlot fences an empty slot, or the pod leaving it (p, from the
// cache, being deleted), at o's generation. It reports a pod found live
// there, and whether the slot is fenced against o's earlier generations (a
// pod of another owner there counts as fenced: o cannot create over it).
func (c *replicaSets) fenceSlot(ctx context.Context, o *object.Object, name string, p *kinds.Pod) (live, fenced bool) {
	gen, st := o.Metadata.Generation, c.pods.Store()
	if p != nil {
		if bus.FenceOf(p.Object) >= gen {
			return false, true
		}
		// Going already: make sure the tombstone it leaves fences the slot.
		cur, _, err := st.Delete(ctx, p.Key(), bus.DeleteOptions{UID: p.Metadata.UID, Fence: gen, GracePeriodSeconds: graceOf(p.Object)})
		if !errors.Is(err, bus.ErrNotFound) {
			return false, err == nil && (cur == nil || bus.FenceOf(cur) >= gen)
		}
	}
	there, err := st.Fence(ctx, object.Key(o.Metadata.Namespace, name), object.NewControllerRef(o), gen)
	if errors.Is(err, bus.ErrAlreadyExists) && there != nil {
		// Ours and not in the cache yet, or another owner's.
		ref, own := there.Metadata.ControllerOf()
		return true, !own || ref.UID != o.Metadata.UID
	}
	return false, err == nil
}
