package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// endpointSliceManager marks the EndpointSlices this controller keeps, as
// Kubernetes' marks its own endpointslice-controller.k8s.io; slices that
// others made for a Service are left to them.
const endpointSliceManager = "endpointslice-controller.homeostat.io"

// conditionEndpointsReady is the Service condition saying whether every
// port of it has a ready endpoint, and if not, why.
const conditionEndpointsReady = "EndpointsReady"

// byService indexes EndpointSlices by the namespace/name of their Service.
const byService = "service"

func serviceIndex(o *object.Object) []string {
	if o.Metadata.Labels[kinds.LabelManagedBy] != endpointSliceManager {
		return nil
	}
	if svc := o.Metadata.Labels[kinds.LabelServiceName]; svc != "" {
		return []string{object.Key(o.Metadata.Namespace, svc)}
	}
	return nil
}

// endpoints keeps each Service's EndpointSlices to the pods its selector
// picks (desiredSlices), and its EndpointsReady condition.
type endpoints struct {
	svcs, pods, slices *reconcile.Informer
	events             *reconcile.Recorder
	now                func() time.Time
}

func (c *endpoints) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o, ok := c.svcs.Get(req.Key)
	var spec *kinds.ServiceSpec
	if ok {
		v, _ := c.svcs.Value(req.Key)
		spec, _ = v.(*kinds.ServiceSpec)
	}
	if !ok || o.Metadata.Deleting() || spec == nil || len(spec.Selector) == 0 || spec.Type == "ExternalName" {
		// No Service, or one whose endpoints are not a selector's: none
		// of ours. (The garbage collector would also remove them, by
		// their owner.)
		return reconcile.Result{}, c.sync(ctx, req.Key, nil, nil)
	}
	s := object.SelectorFromSet(spec.Selector)
	var picked []*kinds.Pod
	for _, p := range podsOf(c.pods, byNamespace, o.Metadata.Namespace) {
		if s.Matches(p.Metadata.Labels) {
			picked = append(picked, p)
		}
	}
	v := desiredSlices(o.Metadata.Name, *spec, picked)
	c.portTaken(o, spec, &v)
	if err := c.sync(ctx, req.Key, o, v.slices); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, c.setCondition(ctx, o, v)
}

// portTaken marks the verdict of a Service whose port another, older
// Service has: the proxies serve that one on it (kinds.PortHolder).
func (c *endpoints) portTaken(o *object.Object, spec *kinds.ServiceSpec, v *endpointsVerdict) {
	all := kinds.DecodedServices(c.svcs)
	for _, sp := range spec.ProxiedPorts() {
		if h := kinds.PortHolder(sp.Port, all); h != nil && h.Key() != o.Key() {
			v.ready, v.reason = false, reasonPortTaken
			v.message = fmt.Sprintf("port %d is Service %s/%s's, which is older: each node's proxy serves one Service on a port",
				sp.Port, h.Metadata.Namespace, h.Metadata.Name)
			return
		}
	}
}

// sharingPorts enqueues the other Services that ask for a port the
// changed one asked for or asks for: which of them holds it may change.
func sharingPorts(ctrl *reconcile.Controller, svcs *reconcile.Informer) func(reconcile.Change) {
	return func(ch reconcile.Change) {
		ports := map[int32]bool{}
		for _, v := range []any{ch.OldValue, ch.NewValue} {
			if spec, ok := v.(*kinds.ServiceSpec); ok {
				for _, p := range spec.ProxiedPorts() {
					ports[p.Port] = true
				}
			}
		}
		if len(ports) == 0 {
			return
		}
		self := ch.Object().Key()
		for _, s := range kinds.DecodedServices(svcs) {
			if s.Spec == nil || s.Object.Key() == self {
				continue
			}
			for _, p := range s.Spec.ProxiedPorts() {
				if ports[p.Port] {
					ctrl.Enqueue(s.Object.Key(), &ch, svcs.Kind().Resource)
					break
				}
			}
		}
	}
}

// sync makes the Service's slices of ours the wanted ones: it creates,
// rewrites and deletes, each by compare-and-swap on the cached version.
func (c *endpoints) sync(ctx context.Context, key string, svc *object.Object, want []sliceWant) error {
	st := c.slices.Store()
	have := map[string]*object.Object{}
	for _, o := range c.slices.ByIndex(byService, key) {
		have[o.Metadata.Name] = o
	}
	var errs []error
	for _, w := range want {
		n, err := sliceObject(svc, w)
		if err != nil {
			return err
		}
		cur := have[w.name]
		delete(have, w.name)
		switch {
		case cur == nil:
			_, err = createIfAbsent(ctx, st, n)
		case sameSlice(cur, n):
			continue
		default:
			next := cur.Clone()
			next.Fields, next.Metadata.Labels, next.Metadata.OwnerReferences = n.Fields, n.Metadata.Labels, n.Metadata.OwnerReferences
			_, err = st.Update(ctx, next, bus.UpdateOptions{Current: cur})
		}
		errs = append(errs, err)
	}
	for _, gone := range have {
		_, _, err := st.Delete(ctx, gone.Key(), bus.DeleteOptions{UID: gone.Metadata.UID})
		errs = append(errs, ignoreNotFound(err))
	}
	return errors.Join(errs...)
}

// sliceObject is the EndpointSlice object of a wanted slice.
func sliceObject(svc *object.Object, w sliceWant) (*object.Object, error) {
	fields := map[string]json.RawMessage{}
	for name, v := range map[string]any{"addressType": w.slice.AddressType, "endpoints": w.slice.Endpoints, "ports": w.slice.Ports} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		fields[name] = b
	}
	return &object.Object{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice", Fields: fields, Metadata: object.Meta{
		Name: w.name, Namespace: svc.Metadata.Namespace,
		Labels:          map[string]string{kinds.LabelServiceName: svc.Metadata.Name, kinds.LabelManagedBy: endpointSliceManager},
		OwnerReferences: []object.OwnerReference{object.NewControllerRef(svc)},
	}}, nil
}

// sameSlice: the stored slice is the wanted one already.
func sameSlice(cur, want *object.Object) bool {
	if !maps.Equal(cur.Metadata.Labels, want.Metadata.Labels) || len(cur.Metadata.OwnerReferences) != 1 ||
		cur.Metadata.OwnerReferences[0].UID != want.Metadata.OwnerReferences[0].UID {
		return false
	}
	for name, v := range want.Fields {
		if !object.SameJSON(cur.Fields[name], v) {
			return false
		}
	}
	return true
}

// setCondition writes the Service's EndpointsReady condition when it
// changed, with a Warning event when it turns to a new reason for not
// being ready, so that describe shows it beside the Service.
func (c *endpoints) setCondition(ctx context.Context, svc *object.Object, v endpointsVerdict) error {
	status := map[string]any{}
	if len(svc.Status) > 0 {
		if err := json.Unmarshal(svc.Status, &status); err != nil {
			return reconcile.Terminal(err)
		}
	}
	var conds []object.Condition
	if raw, ok := status["conditions"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &conds)
	}
	old := object.FindCondition(conds, conditionEndpointsReady)
	was := ""
	if old != nil {
		was = old.Reason
	}
	st := object.ConditionFalse
	if v.ready {
		st = object.ConditionTrue
	}
	if !object.SetCondition(&conds, object.Condition{Type: conditionEndpointsReady, Status: st, Reason: v.reason, Message: v.message,
		ObservedGeneration: svc.Metadata.Generation}, c.now().UTC().Truncate(time.Second)) {
		return nil
	}
	for i := range conds {
		// A Service's conditions are metav1.Conditions: no update time.
		conds[i].LastUpdateTime = time.Time{}
	}
	status["conditions"] = conds
	if !v.ready && v.reason != was {
		c.events.Event(ctx, svc, "Warning", v.reason, "%s", v.message)
	}
	return updateStatus(ctx, c.svcs.Store(), svc, status)
}

// servicesOfPod enqueues the Services of a pod's namespace whose selector
// picks the pod before or after a change that can change its endpoint.
func servicesOfPod(ctrl *reconcile.Controller, svcs *reconcile.Informer, bucket string) func(reconcile.Change) {
	return func(ch reconcile.Change) {
		inNamespace := svcs.ByIndex(byNamespace, ch.Object().Metadata.Namespace)
		if len(inNamespace) == 0 || ch.Old != nil && ch.New != nil && !endpointChanged(ch) {
			return
		}
		for _, so := range inNamespace {
			v, _ := svcs.Value(so.Key())
			spec, _ := v.(*kinds.ServiceSpec)
			if spec == nil || len(spec.Selector) == 0 {
				continue
			}
			sel := object.SelectorFromSet(spec.Selector)
			if (ch.Old != nil && sel.Matches(ch.Old.Metadata.Labels)) || (ch.New != nil && sel.Matches(ch.New.Metadata.Labels)) {
				ctrl.Enqueue(so.Key(), &ch, bucket)
			}
		}
	}
}

// endpointChanged reports the pod changes that can change its endpoint:
// labels, deletion, its address, phase, readiness, its node and the ports
// its node gave it, once it has an address.
func endpointChanged(ch reconcile.Change) bool {
	old, new := ch.Old, ch.New
	if old.Metadata.Deleting() != new.Metadata.Deleting() || !maps.Equal(old.Metadata.Labels, new.Metadata.Labels) {
		return true
	}
	a, okA := ch.OldValue.(*kinds.Pod)
	b, okB := ch.NewValue.(*kinds.Pod)
	if !okA || !okB {
		return true
	}
	if a.Status.PodIP == "" && b.Status.PodIP == "" {
		// Not an endpoint before or after (a bind, a pending pod's
		// status): only the count of pods selected, which it was already.
		return false
	}
	if a.Status.PodIP != b.Status.PodIP || a.Status.Phase != b.Status.Phase || a.Ready() != b.Ready() || a.Spec.NodeName != b.Spec.NodeName {
		return true
	}
	return !samePorts(a.Status.ContainerStatuses, b.Status.ContainerStatuses)
}

// samePorts reports whether two versions of a pod's container statuses
// give the same ports to the same containers. They are matched by name:
// the controllers keep the statuses of some containers alone
// (kinds.PodAfter), so one that restarts joins the list.
func samePorts(a, b []kinds.ContainerStatus) bool {
	ported := func(cs []kinds.ContainerStatus) int {
		n := 0
		for _, c := range cs {
			if len(c.Ports) > 0 {
				n++
			}
		}
		return n
	}
	if ported(a) != ported(b) {
		return false
	}
	for _, c := range a {
		if len(c.Ports) == 0 {
			continue
		}
		i := slices.IndexFunc(b, func(d kinds.ContainerStatus) bool { return d.Name == c.Name })
		if i < 0 || !slices.Equal(c.Ports, b[i].Ports) {
			return false
		}
	}
	return true
}
