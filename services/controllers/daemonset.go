package controllers

import (
	"context"
	"errors"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// LabelTemplateHash marks a DaemonSet pod with its template version.
const LabelTemplateHash = "controller-revision-hash"

// daemonSets run one pod, named <daemonset>-<node>, on every eligible node.
type daemonSets struct {
	ds, pods, nodes *reconcile.Informer
	events          *reconcile.Recorder
	now             func() time.Time
}

func (c *daemonSets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o, ok := c.ds.Get(req.Key)
	if !ok || o.Metadata.Deleting() {
		return reconcile.Result{}, nil
	}
	var spec kinds.DaemonSetSpec
	if err := o.DecodeSpec(&spec); err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	hash := templateHash(spec.Template)
	byNodeName := map[string]*kinds.Pod{}
	var errs []error
	for _, pod := range podsOf(c.pods, byOwner, o.Metadata.UID) {
		if pod.Terminal() && !pod.Metadata.Deleting() {
			errs = append(errs, deletePod(ctx, c.pods.Store(), pod.Object)) // recreated on the next pass
			continue
		}
		byNodeName[pod.Spec.NodeName] = pod
	}
	st := kinds.DaemonSetStatus{ObservedGeneration: o.Metadata.Generation}
	var outdated []*kinds.Pod
	unavailable := int32(0)
	minReady := time.Duration(spec.MinReadySeconds) * time.Second
	now := c.now()
	var requeue time.Duration
	for _, n := range c.nodes.List() {
		pod := byNodeName[n.Metadata.Name]
		delete(byNodeName, n.Metadata.Name)
		if !daemonEligible(n, spec.Template.Spec) {
			if pod != nil {
				st.NumberMisscheduled++
				errs = append(errs, deletePod(ctx, c.pods.Store(), pod.Object))
			}
			continue
		}
		st.DesiredNumberScheduled++
		if pod == nil {
			unavailable++
			errs = append(errs, c.create(ctx, o, spec, n.Metadata.Name, hash))
			continue
		}
		st.CurrentNumberScheduled++
		if pod.Metadata.Labels[LabelTemplateHash] == hash {
			st.UpdatedNumberScheduled++
		} else if !pod.Metadata.Deleting() {
			outdated = append(outdated, pod)
		}
		if since, ok := pod.ReadySince(); ok {
			st.NumberReady++
			wait := since.Add(minReady).Sub(now)
			if wait <= 0 {
				st.NumberAvailable++
				continue
			}
			// Nothing changes when a ready pod comes of age: look again then.
			requeue = sooner(requeue, wait)
		}
		unavailable++
	}
	// Pods on nodes that no longer exist: no agent will stop them.
	for _, pod := range byNodeName {
		errs = append(errs, forceDeletePod(ctx, c.pods.Store(), pod.Object))
	}
	if spec.UpdateStrategy.Type != "OnDelete" {
		errs = append(errs, c.rollOutdated(ctx, o, spec, outdated, st.DesiredNumberScheduled, unavailable))
	}
	if err := updateStatus(ctx, c.ds.Store(), o, st); err != nil {
		errs = append(errs, err)
	}
	return reconcile.Result{RequeueAfter: requeue}, errors.Join(errs...)
}

func (c *daemonSets) create(ctx context.Context, o *object.Object, spec kinds.DaemonSetSpec, node, hash string) error {
	tmpl := spec.Template
	tmpl.Spec.NodeName = node
	// Daemons stay on failing nodes, as in Kubernetes.
	tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations,
		kinds.Toleration{Key: kinds.TaintNotReady, Operator: "Exists", Effect: kinds.NoExecute},
		kinds.Toleration{Key: kinds.TaintUnreachable, Operator: "Exists", Effect: kinds.NoExecute})
	name := truncName(o.Metadata.Name, "-"+node)
	pod, err := podFromTemplate(o, tmpl, o.Metadata.Namespace, name, map[string]string{LabelTemplateHash: hash})
	if err != nil {
		return err
	}
	made, err := createIfAbsent(ctx, c.pods.Store(), pod)
	if err != nil {
		c.events.Event(ctx, o, kinds.EventWarning, "FailedCreate", "Error creating pod %s on node %s: %v", name, node, err)
		return err
	}
	if made {
		c.events.Event(ctx, o, kinds.EventNormal, "SuccessfulCreate", "Created pod: %s on node %s", name, node)
	}
	return nil
}

// rollOutdated replaces pods of an old template, keeping at most
// maxUnavailable nodes without an available daemon.
func (c *daemonSets) rollOutdated(ctx context.Context, o *object.Object, spec kinds.DaemonSetSpec, outdated []*kinds.Pod, desired, unavailable int32) error {
	maxUnavailable := int32(1)
	if ru := spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable = max(1, ru.MaxUnavailable.Scaled(desired, false, 1))
	}
	var errs []error
	budget := maxUnavailable - unavailable
	for _, p := range outdated {
		if !p.Ready() {
			// Already unavailable: replacing it costs nothing.
			errs = append(errs, deletePod(ctx, c.pods.Store(), p.Object))
			continue
		}
		if budget <= 0 {
			continue
		}
		budget--
		errs = append(errs, deletePod(ctx, c.pods.Store(), p.Object))
		c.events.Event(ctx, o, kinds.EventNormal, "SuccessfulDelete", "Deleted pod %s to update it", p.Metadata.Name)
	}
	return errors.Join(errs...)
}

// daemonEligible: the node matches the pod's node selector and required
// node affinity, and the pod tolerates its NoSchedule and NoExecute taints.
// Unschedulable nodes still run daemons, as in Kubernetes.
func daemonEligible(node *object.Object, spec kinds.PodSpec) bool {
	var ns kinds.NodeSpec
	_ = node.DecodeSpec(&ns)
	if !kinds.MatchesNodeSelector(node.Metadata.Labels, &spec) {
		return false
	}
	for _, t := range ns.Taints {
		if t.Effect == kinds.PreferNoSchedule || t.Key == kinds.TaintNotReady || t.Key == kinds.TaintUnreachable {
			continue
		}
		if !kinds.Tolerated(t, spec.Tolerations) {
			return false
		}
	}
	return true
}
