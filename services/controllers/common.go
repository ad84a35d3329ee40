package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/controllers/reconcile"
)

// Index names on informers.
const (
	byNamespace = "namespace"
	byOwner     = "owner" // controller owner UID
	byNode      = "node"  // a pod's spec.nodeName
)

func namespaceIndex(o *object.Object) []string { return []string{o.Metadata.Namespace} }

func ownerIndex(o *object.Object) []string {
	if r, ok := o.Metadata.ControllerOf(); ok {
		return []string{r.UID}
	}
	return nil
}

// Label keys Homeostat sets on what controllers create.
const (
	LabelPodTemplateHash  = "pod-template-hash"
	LabelJobName          = "job-name"
	LabelControllerUID    = "controller-uid"
	AnnotationRevision    = "deployment.homeostat.io/revision"
	AnnotationChangeCause = "homeostat.io/change-cause"
)

// truncName keeps a generated name a DNS label once suffix is added.
func truncName(base, suffix string) string {
	maxBase := 63 - len(suffix)
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	for len(base) > 0 && base[len(base)-1] == '-' {
		base = base[:len(base)-1]
	}
	return base + suffix
}

// templateHash is a stable hash of a pod template, used to name
// ReplicaSets and to tell template versions apart.
func templateHash(t kinds.PodTemplate) string {
	b, _ := json.Marshal(t)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

// podFromTemplate builds a pod a controller owns.
func podFromTemplate(owner *object.Object, t kinds.PodTemplate, ns, name string, extraLabels map[string]string) (*object.Object, error) {
	labels := map[string]string{}
	for k, v := range t.Metadata.Labels {
		labels[k] = v
	}
	for k, v := range extraLabels {
		labels[k] = v
	}
	p := &object.Object{
		APIVersion: "v1", Kind: "Pod",
		Metadata: object.Meta{
			Name: name, Namespace: ns, Labels: labels, Annotations: t.Metadata.Annotations,
			OwnerReferences: []object.OwnerReference{object.NewControllerRef(owner)},
		},
	}
	return p, p.SetSpec(t.Spec)
}

// createIfAbsent creates o; an existing object of that name is not an error,
// because a concurrent reconcile of the same owner may have made it.
func createIfAbsent(ctx context.Context, st *bus.Store, o *object.Object) (bool, error) {
	_, err := st.Create(ctx, o)
	if errors.Is(err, bus.ErrAlreadyExists) {
		return false, nil
	}
	return err == nil, err
}

// deletePod removes a pod the controller owns, guarded by its uid. A pod
// running on a node is deleted gracefully: its agent stops the containers
// within the grace period, then removes it.
func deletePod(ctx context.Context, st *bus.Store, p *object.Object) error {
	opts := bus.DeleteOptions{UID: p.Metadata.UID}
	var spec kinds.PodSpec
	if p.DecodeSpec(&spec) == nil && spec.NodeName != "" {
		g := kinds.Int64(spec.TerminationGracePeriodSeconds, 30)
		opts.GracePeriodSeconds = &g
	}
	return deleteWith(ctx, st, p, opts)
}

// forceDeletePod removes a pod at once: its node is gone or unreachable.
func forceDeletePod(ctx context.Context, st *bus.Store, p *object.Object) error {
	zero := int64(0)
	return deleteWith(ctx, st, p, bus.DeleteOptions{UID: p.Metadata.UID, GracePeriodSeconds: &zero})
}

func deleteWith(ctx context.Context, st *bus.Store, p *object.Object, opts bus.DeleteOptions) error {
	_, _, err := st.Delete(ctx, p.Key(), opts)
	if errors.Is(err, bus.ErrNotFound) {
		return nil
	}
	return err
}

// updateStatus writes status if it changed, by compare-and-swap on the
// version read from the cache; a conflict is retried by the runtime.
func updateStatus(ctx context.Context, st *bus.Store, cur *object.Object, status any) error {
	b, err := json.Marshal(status)
	if err != nil {
		return err
	}
	if object.SameJSON(cur.Status, b) {
		return nil
	}
	n := cur.Clone()
	n.Status = b
	_, err = st.Update(ctx, n, bus.UpdateOptions{Current: cur})
	return err
}

// claim sorts the pods of a namespace into those owner controls (adopting
// orphans that match its selector and releasing its pods that no longer do).
func claim(ctx context.Context, st *bus.Store, owner *object.Object, sel object.Selector, candidates []*object.Object) ([]*kinds.Pod, error) {
	var out []*kinds.Pod
	for _, c := range candidates {
		ref, controlled := c.Metadata.ControllerOf()
		matches := sel.Matches(c.Metadata.Labels)
		switch {
		case controlled && ref.UID == owner.Metadata.UID && matches:
		case controlled && ref.UID == owner.Metadata.UID:
			if err := setOwner(ctx, st, c, nil, owner.Metadata.UID); err != nil {
				return nil, fmt.Errorf("releasing %s: %w", c.Metadata.Name, err)
			}
			continue
		case !controlled && matches && !c.Metadata.Deleting() && !owner.Metadata.Deleting():
			ref := object.NewControllerRef(owner)
			if err := setOwner(ctx, st, c, &ref, ""); err != nil {
				return nil, fmt.Errorf("adopting %s: %w", c.Metadata.Name, err)
			}
		default:
			continue
		}
		p, err := kinds.DecodePod(c)
		if err != nil {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Name < out[j].Metadata.Name })
	return out, nil
}

// setOwner adds ref as controller, or removes the reference to dropUID.
func setOwner(ctx context.Context, st *bus.Store, cur *object.Object, ref *object.OwnerReference, dropUID string) error {
	n := cur.Clone()
	if ref != nil {
		n.Metadata.OwnerReferences = append(n.Metadata.OwnerReferences, *ref)
	} else {
		refs := n.Metadata.OwnerReferences[:0]
		for _, r := range n.Metadata.OwnerReferences {
			if r.UID != dropUID {
				refs = append(refs, r)
			}
		}
		n.Metadata.OwnerReferences = refs
	}
	_, err := st.Update(ctx, n, bus.UpdateOptions{Current: cur})
	if errors.Is(err, bus.ErrNotFound) {
		return nil
	}
	return err
}

// enqueueOwner maps a change of a dependent to its controller owner of kind.
func enqueueOwner(ctrl *reconcile.Controller, kind string, bucket string, relevant func(old, new *object.Object) bool) func(reconcile.Change) {
	return func(ch reconcile.Change) {
		if ch.Old != nil && ch.New != nil && relevant != nil && !relevant(ch.Old, ch.New) {
			return
		}
		seen := map[string]bool{}
		for _, o := range []*object.Object{ch.Old, ch.New} {
			if o == nil {
				continue
			}
			if ref, ok := o.Metadata.ControllerOf(); ok && ref.Kind == kind {
				k := object.Key(o.Metadata.Namespace, ref.Name)
				if !seen[k] {
					seen[k] = true
					ctrl.Enqueue(k, &ch, bucket)
				}
			}
		}
	}
}

// podChanged reports the pod changes an owner cares about.
func podChanged(old, new *object.Object) bool {
	if !old.Metadata.Deleting() && new.Metadata.Deleting() {
		return true
	}
	if !object.SameJSON(mustJSON(old.Metadata.Labels), mustJSON(new.Metadata.Labels)) ||
		!object.SameJSON(mustJSON(old.Metadata.OwnerReferences), mustJSON(new.Metadata.OwnerReferences)) {
		return true
	}
	a, errA := kinds.DecodePod(old)
	b, errB := kinds.DecodePod(new)
	if errA != nil || errB != nil {
		return true
	}
	return a.Status.Phase != b.Status.Phase || a.Ready() != b.Ready() || a.Restarts() != b.Restarts()
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
