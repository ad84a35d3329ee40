package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// Index names on informers.
const (
	byNamespace = "namespace"
	byOwner     = "owner"  // controller owner UID
	byNode      = "node"   // a pod's spec.nodeName
	byOrphan    = "orphan" // namespace of objects with no controller
)

func orphanIndex(o *object.Object) []string {
	if _, ok := o.Metadata.ControllerOf(); ok {
		return nil
	}
	return []string{o.Metadata.Namespace}
}

// podsOf returns the decoded pods of an index value.
func podsOf(inf *reconcile.Informer, index, value string) []*kinds.Pod {
	vs := inf.ValuesByIndex(index, value)
	out := make([]*kinds.Pod, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.(*kinds.Pod))
	}
	return out
}

func namespaceIndex(o *object.Object) []string { return []string{o.Metadata.Namespace} }

func ownerIndex(o *object.Object) []string {
	if r, ok := o.Metadata.ControllerOf(); ok {
		return []string{r.UID}
	}
	return nil
}

// Label keys Homeostat sets on what controllers create.
const (
	LabelPodTemplateHash = "pod-template-hash"
	LabelJobName         = "job-name"
	LabelControllerUID   = "controller-uid"
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
	m, err := newPodMaker(owner, t, ns, extraLabels)
	if err != nil {
		return nil, err
	}
	return m.pod(name), nil
}

// podMaker builds the pods a controller owns from one template, whose
// spec it encodes once for all of them: encoding it for each pod was most
// of the cost of making a large ReplicaSet's pods.
type podMaker struct {
	owner       *object.Object
	ns          string
	labels      map[string]string
	annotations map[string]string
	spec        []byte
}

func newPodMaker(owner *object.Object, t kinds.PodTemplate, ns string, extraLabels map[string]string) (*podMaker, error) {
	labels := map[string]string{}
	maps.Copy(labels, t.Metadata.Labels)
	maps.Copy(labels, extraLabels)
	var enc object.Object
	if err := enc.SetSpec(t.Spec); err != nil {
		return nil, err
	}
	return &podMaker{owner: owner, ns: ns, labels: labels, annotations: t.Metadata.Annotations, spec: enc.Spec}, nil
}

// pod is the pod named name. Its spec is the maker's encoding and its
// annotations the template's, shared: neither is changed in place (a
// store's writes clone what they are given).
func (m *podMaker) pod(name string) *object.Object {
	return &object.Object{
		APIVersion: "v1", Kind: "Pod",
		Metadata: object.Meta{
			Name: name, Namespace: m.ns, Labels: maps.Clone(m.labels), Annotations: m.annotations,
			OwnerReferences: []object.OwnerReference{object.NewControllerRef(m.owner)},
		},
		Spec: m.spec,
	}
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
	return deleteFenced(ctx, st, p, 0)
}

// deleteFenced deletes a pod as deletePod does, fencing its slot against
// its controller's generations before fence (see bus.Fence).
func deleteFenced(ctx context.Context, st *bus.Store, p *object.Object, fence int64) error {
	return deleteWith(ctx, st, p, bus.DeleteOptions{UID: p.Metadata.UID, Fence: fence, GracePeriodSeconds: graceOf(p)})
}

// graceOf is the grace period a pod is deleted with: none unless it is on
// a node, whose agent must stop its containers.
func graceOf(p *object.Object) *int64 {
	var spec kinds.PodSpec
	if p.DecodeSpec(&spec) == nil && spec.NodeName != "" {
		g := kinds.Int64(spec.TerminationGracePeriodSeconds, 30)
		return &g
	}
	return nil
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
	if object.SameEncoding(cur.Status, b) {
		return nil
	}
	n := cur.Clone()
	n.Status = b
	_, err = st.Update(ctx, n, bus.UpdateOptions{Current: cur})
	return err
}

// claim returns the pods owner controls, in no order: its own that still
// match its selector (releasing those that no longer do) and orphans that
// match (adopting them).
func claim(ctx context.Context, pods *reconcile.Informer, owner *object.Object, sel object.Selector) ([]*kinds.Pod, error) {
	st := pods.Store()
	var out []*kinds.Pod
	for _, p := range podsOf(pods, byOwner, owner.Metadata.UID) {
		if sel.Matches(p.Metadata.Labels) {
			out = append(out, p)
			continue
		}
		if err := setOwner(ctx, st, p.Object, nil, owner.Metadata.UID); err != nil {
			return nil, fmt.Errorf("releasing %s: %w", p.Metadata.Name, err)
		}
	}
	if !owner.Metadata.Deleting() {
		for _, p := range podsOf(pods, byOrphan, owner.Metadata.Namespace) {
			if p.Metadata.Deleting() || !sel.Matches(p.Metadata.Labels) {
				continue
			}
			ref := object.NewControllerRef(owner)
			if err := setOwner(ctx, st, p.Object, &ref, ""); err != nil {
				return nil, fmt.Errorf("adopting %s: %w", p.Metadata.Name, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// stored is cur as the store holds it, for a write made over it: the
// pods cache keeps copies whose status is their phase alone
// (kinds.PhaseOnly), never to be written back. A copy of an older
// revision than the stored is a conflict, as its write would have been.
func stored(ctx context.Context, st *bus.Store, cur *object.Object) (*object.Object, error) {
	if !kinds.IsPhaseOnly(cur) {
		return cur, nil
	}
	o, err := st.Get(ctx, cur.Key())
	if err != nil {
		return nil, err
	}
	if o.Metadata.ResourceVersion != cur.Metadata.ResourceVersion {
		return nil, fmt.Errorf("%s %q: %w (have %s, latest %s)", st.Resource(), cur.Key(), bus.ErrConflict,
			cur.Metadata.ResourceVersion, o.Metadata.ResourceVersion)
	}
	return o, nil
}

// setOwner adds ref as controller, or removes the reference to dropUID.
func setOwner(ctx context.Context, st *bus.Store, cur *object.Object, ref *object.OwnerReference, dropUID string) error {
	cur, err := stored(ctx, st, cur)
	if err != nil {
		return ignoreNotFound(err)
	}
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
	_, err = st.Update(ctx, n, bus.UpdateOptions{Current: cur})
	return ignoreNotFound(err)
}

// enqueueOwner maps a change of a dependent to its controller owner of kind.
func enqueueOwner(ctrl *reconcile.Controller, kind string, bucket string, relevant func(reconcile.Change) bool) func(reconcile.Change) {
	return func(ch reconcile.Change) {
		if ch.Old != nil && ch.New != nil && relevant != nil && !relevant(ch) {
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

// podChanged reports the pod changes an owner cares about: deletion,
// labels, ownership, phase, readiness, restarts.
func podChanged(ch reconcile.Change) bool {
	old, new := ch.Old, ch.New
	if old.Metadata.Deleting() != new.Metadata.Deleting() || !maps.Equal(old.Metadata.Labels, new.Metadata.Labels) {
		return true
	}
	or, ook := old.Metadata.ControllerOf()
	nr, nok := new.Metadata.ControllerOf()
	if ook != nok || or.UID != nr.UID || len(old.Metadata.OwnerReferences) != len(new.Metadata.OwnerReferences) {
		return true
	}
	a, okA := ch.OldValue.(*kinds.Pod)
	b, okB := ch.NewValue.(*kinds.Pod)
	if !okA || !okB {
		return true
	}
	return a.Status.Phase != b.Status.Phase || a.Ready() != b.Ready() || a.Restarts() != b.Restarts()
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// removeObject deletes o from st; RBAC objects and tokens, which the
// controllers may not write, go through the API's collector, which checks
// that they are garbage.
func removeObject(ctx context.Context, conn *bus.Conn, st *bus.Store, o *object.Object) error {
	if bus.Protected(st.Resource()) {
		return conn.Collect(ctx, st.Resource(), o.Key(), o.Metadata.UID)
	}
	_, _, err := st.Delete(ctx, o.Key(), bus.DeleteOptions{UID: o.Metadata.UID})
	return err
}

func ignoreNotFound(err error) error {
	if errors.Is(err, bus.ErrNotFound) {
		return nil
	}
	return err
}

// sooner is the sooner of two times to look again, either 0 for none.
func sooner(cur, d time.Duration) time.Duration {
	if d == 0 {
		return cur
	}
	if cur == 0 || d < cur {
		return d
	}
	return cur
}
