package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// assessment is what an object's own state says of its health.
type assessment struct {
	health   string
	status   string
	reason   string
	message  string
	detail   []string
	fix      string
	progress []Count
	// own: the object is a cause in its own right, whatever lies below
	// it (a paused Deployment, a failing controller, a blocked deletion).
	own bool
	// group is what identical siblings share; "" groups by reason.
	group string
	// node is an unhealthy node a pod is on: the deeper cause.
	node *object.Object
}

// walk holds an Input indexed for one answer.
type walk struct {
	in       Input
	children map[string][]*object.Object
	assessed map[string]*assessment
	// prefix is where a pod's spec lies in the root ("spec.template.spec."
	// for a workload, "spec." for a pod).
	prefix string
	// pod decodes a pod.
	pod func(*object.Object) (*kinds.Pod, error)
}

func newWalk(in Input, pod func(*object.Object) (*kinds.Pod, error)) *walk {
	w := &walk{in: in, children: map[string][]*object.Object{}, assessed: map[string]*assessment{}, prefix: "spec.template.spec.", pod: pod}
	if in.Root.Kind == "Pod" {
		w.prefix = "spec."
	}
	seen := map[string]bool{in.Root.Metadata.UID: true}
	for _, o := range in.Objects {
		if seen[o.Metadata.UID] {
			continue
		}
		seen[o.Metadata.UID] = true
		for _, r := range o.Metadata.OwnerReferences {
			w.children[r.UID] = append(w.children[r.UID], o)
		}
	}
	for uid := range w.children {
		sort.Slice(w.children[uid], func(i, j int) bool {
			return w.children[uid][i].Metadata.Name < w.children[uid][j].Metadata.Name
		})
	}
	return w
}

// assess judges o, once.
func (w *walk) assess(o *object.Object) *assessment {
	if a, ok := w.assessed[o.Metadata.UID]; ok {
		return a
	}
	var a *assessment
	switch {
	case o.Metadata.Deleting():
		a = w.deleting(o)
	case o.Kind == "Deployment":
		a = assessDeployment(o)
	case o.Kind == "ReplicaSet":
		a = assessReplicaSet(o)
	case o.Kind == "DaemonSet":
		a = assessDaemonSet(o)
	case o.Kind == "Job":
		a = assessJob(o)
	case o.Kind == "Pod":
		a = w.assessPod(o)
	case o.Kind == "Node":
		a = assessNode(o)
	case o.Kind == "Namespace":
		a = &assessment{health: Healthy, status: "Active"}
	default:
		a = assessConditions(o)
	}
	w.failingLoops(o, a)
	w.warnings(o, a)
	w.assessed[o.Metadata.UID] = a
	return a
}

// failingLoops makes a controller that keeps failing on o a cause of its
// own: its error is why nothing below changes.
func (w *walk) failingLoops(o *object.Object, a *assessment) {
	for _, l := range w.in.Loops[o.Metadata.UID] {
		if l.State != StateBackingOff && l.State != StateFailed {
			continue
		}
		a.health, a.own = Unhealthy, true
		a.reason = "ReconcileFailing"
		a.message = fmt.Sprintf("the %s controller fails on it (attempt %d): %s", l.Controller, l.Attempt, firstLine(l.LastError))
		a.fix = "fix what the error names; the controller retries with backoff, and at once when the object changes"
		if l.State == StateFailed {
			a.fix = "the error is permanent: change the object so that the controller tries again"
		}
		return
	}
}

// warnings gives an object that is not healthy, and whose state says no
// more, the latest Warning event about it as its reason.
func (w *walk) warnings(o *object.Object, a *assessment) {
	if a.health == Healthy || a.reason != "" {
		return
	}
	var latest *kinds.Event
	for i, ev := range w.in.Events[o.Metadata.UID] {
		if ev.Type != kinds.EventWarning {
			continue
		}
		if latest == nil || ev.LastTimestamp > latest.LastTimestamp {
			latest = &w.in.Events[o.Metadata.UID][i]
		}
	}
	if latest != nil {
		a.reason, a.message = latest.Reason, latest.Message
		if a.health == Progressing {
			a.health = Unhealthy
		}
	}
}

// finalizerOwners say who removes each finalizer Homeostat knows.
var finalizerOwners = map[string]string{
	object.FinalizerForeground: "the garbage collector removes it once the dependents (blockOwnerDeletion) are gone",
	object.FinalizerOrphan:     "the garbage collector removes it once the dependents are released",
	object.FinalizerNamespace:  "the namespace controller removes it once every object in the namespace is gone",
}

// deleting judges an object whose deletion was asked for.
func (w *walk) deleting(o *object.Object) *assessment {
	since := o.Metadata.DeletionTimestamp.UTC()
	a := &assessment{health: Progressing, status: "Terminating", reason: "Deleting", own: true,
		message: fmt.Sprintf("being deleted since %s", since.Format(time.RFC3339))}
	if len(o.Metadata.Finalizers) > 0 {
		a.health, a.reason = Unhealthy, "DeletionBlocked"
		a.message = fmt.Sprintf("its deletion (asked %s ago) waits for finalizers %s", ago(w.in.Now, since), strings.Join(o.Metadata.Finalizers, ", "))
		var unknown []string
		for _, f := range o.Metadata.Finalizers {
			if who, ok := finalizerOwners[f]; ok {
				a.detail = append(a.detail, f+": "+who)
			} else {
				a.detail = append(a.detail, f+": not Homeostat's; the controller that added it must remove it")
				unknown = append(unknown, f)
			}
		}
		a.fix = "wait for what the finalizers wait for (see above)"
		if len(unknown) > 0 {
			a.fix = fmt.Sprintf("run the controller that owns %s, or remove it by hand: kubectl patch %s %s --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'",
				strings.Join(unknown, ", "), strings.ToLower(o.Kind), o.Metadata.Name)
		}
		return a
	}
	if o.Kind == "Pod" {
		return w.terminatingPod(o, a)
	}
	return a
}

// terminatingPod: a pod being deleted waits for its node's agent to stop
// it within its grace period.
func (w *walk) terminatingPod(o *object.Object, a *assessment) *assessment {
	p, err := w.pod(o)
	if err != nil || p.Spec.NodeName == "" {
		return a
	}
	n := w.in.Nodes[p.Spec.NodeName]
	if n != nil && assessNode(n).health != Healthy {
		a.health, a.reason = Unhealthy, "NodeNotReady"
		a.message = fmt.Sprintf("its node %s is not ready, so no agent stops it; it goes when the node is evicted", n.Metadata.Name)
		a.node = n
		return a
	}
	// The deletion timestamp of a graceful delete is when the grace ends.
	if w.in.Now.After(o.Metadata.DeletionTimestamp.Add(time.Minute)) {
		a.health, a.reason = Unhealthy, "StuckTerminating"
		a.message = fmt.Sprintf("its grace period ended %s ago and the agent of %s has not removed it", ago(w.in.Now, *o.Metadata.DeletionTimestamp), p.Spec.NodeName)
		a.fix = fmt.Sprintf("check the agent of node %s (its log, and homeostat describe node %s)", p.Spec.NodeName, p.Spec.NodeName)
	}
	return a
}

func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < time.Second {
		return "0s"
	}
	return d.Round(time.Second).String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func ratio(ready, desired int32) string { return fmt.Sprintf("%d/%d ready", ready, desired) }

func counts(pairs ...any) []Count {
	var out []Count
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Count{Name: pairs[i].(string), Value: int64(pairs[i+1].(int32))})
	}
	return out
}

// condition finds a condition's status, reason and message.
func condition(conds []object.Condition, typ string) *object.Condition {
	return object.FindCondition(conds, typ)
}

func assessDeployment(o *object.Object) *assessment {
	var spec kinds.DeploymentSpec
	var st kinds.DeploymentStatus
	_ = o.DecodeSpec(&spec)
	_ = o.DecodeStatus(&st)
	desired := kinds.Int32(spec.Replicas, 1)
	a := &assessment{status: ratio(st.ReadyReplicas, desired),
		progress: counts("desired", desired, "updated", st.UpdatedReplicas, "ready", st.ReadyReplicas,
			"available", st.AvailableReplicas, "unavailable", st.UnavailableReplicas)}
	converged := st.ObservedGeneration >= o.Metadata.Generation && st.UpdatedReplicas == desired &&
		st.AvailableReplicas == desired && st.Replicas == desired
	switch {
	case converged && spec.Paused:
		a.health, a.status = Healthy, a.status+", paused"
	case converged:
		a.health = Healthy
	case spec.Paused:
		a.health, a.own, a.reason = Unhealthy, true, "Paused"
		a.message = "the Deployment is paused, so its rollout does not go on"
		a.fix = fmt.Sprintf("resume it: kubectl rollout resume deployment/%s (or homeostat rollout resume deployment/%s)", o.Metadata.Name, o.Metadata.Name)
	case st.ObservedGeneration < o.Metadata.Generation:
		a.health, a.reason = Progressing, "NotObservedYet"
		a.message = fmt.Sprintf("the deployment controller has not acted on generation %d yet", o.Metadata.Generation)
	default:
		a.health = Progressing
		if c := condition(st.Conditions, "Progressing"); c != nil && c.Reason == "ProgressDeadlineExceeded" {
			// Named even when what lies below explains it: the rollout
			// has stopped being waited for.
			a.health, a.reason, a.message, a.own = Unhealthy, c.Reason, c.Message, true
			a.fix = "fix what keeps the new pods from becoming available (the causes above); the rollout goes on once they are"
		}
	}
	return a
}

func assessReplicaSet(o *object.Object) *assessment {
	var spec kinds.ReplicaSetSpec
	var st kinds.ReplicaSetStatus
	_ = o.DecodeSpec(&spec)
	_ = o.DecodeStatus(&st)
	desired := kinds.Int32(spec.Replicas, 1)
	a := &assessment{status: ratio(st.ReadyReplicas, desired), health: Progressing,
		progress: counts("desired", desired, "current", st.Replicas, "ready", st.ReadyReplicas, "available", st.AvailableReplicas)}
	if st.ReadyReplicas == desired && st.Replicas == desired && st.ObservedGeneration >= o.Metadata.Generation {
		a.health = Healthy
	}
	if c := condition(st.Conditions, "ReplicaFailure"); c != nil && c.Status == object.ConditionTrue {
		a.health, a.reason, a.message = Unhealthy, c.Reason, c.Message
	}
	return a
}

func assessDaemonSet(o *object.Object) *assessment {
	var st kinds.DaemonSetStatus
	_ = o.DecodeStatus(&st)
	d := st.DesiredNumberScheduled
	a := &assessment{status: ratio(st.NumberReady, d), health: Progressing,
		progress: counts("desired", d, "current", st.CurrentNumberScheduled, "updated", st.UpdatedNumberScheduled,
			"ready", st.NumberReady, "misscheduled", st.NumberMisscheduled)}
	if st.NumberReady == d && st.UpdatedNumberScheduled == d && st.CurrentNumberScheduled == d && st.ObservedGeneration >= o.Metadata.Generation {
		a.health = Healthy
	}
	return a
}

func assessJob(o *object.Object) *assessment {
	var spec kinds.JobSpec
	var st kinds.JobStatus
	_ = o.DecodeSpec(&spec)
	_ = o.DecodeStatus(&st)
	completions := kinds.Int32(spec.Completions, 1)
	a := &assessment{health: Progressing, status: fmt.Sprintf("%d/%d complete", st.Succeeded, completions),
		progress: counts("completions", completions, "active", st.Active, "succeeded", st.Succeeded, "failed", st.Failed)}
	switch {
	case isTrue(st.Conditions, "Complete"):
		a.health, a.status = Healthy, "Complete"
	case isTrue(st.Conditions, "Failed"):
		c := condition(st.Conditions, "Failed")
		a.health, a.status, a.reason, a.message, a.own = Unhealthy, "Failed", c.Reason, c.Message, true
		a.fix = "the Job has given up: fix why its pods fail (below), then delete it and create it again"
	case spec.Suspend:
		a.status, a.reason, a.message = "Suspended", "Suspended", "the Job is suspended: no pod runs until spec.suspend is false"
	}
	return a
}

func isTrue(conds []object.Condition, typ string) bool {
	c := condition(conds, typ)
	return c != nil && c.Status == object.ConditionTrue
}

// assessNode: ready, schedulable and without taints that repel pods.
func assessNode(o *object.Object) *assessment {
	var spec kinds.NodeSpec
	var st kinds.NodeStatus
	_ = o.DecodeSpec(&spec)
	_ = o.DecodeStatus(&st)
	a := &assessment{health: Healthy, status: "Ready"}
	for _, c := range st.Conditions {
		a.detail = append(a.detail, fmt.Sprintf("condition %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message))
	}
	for _, t := range spec.Taints {
		a.detail = append(a.detail, fmt.Sprintf("taint %s=%s:%s", t.Key, t.Value, t.Effect))
	}
	ready := condition(st.Conditions, "Ready")
	switch {
	case ready == nil || ready.Status != object.ConditionTrue:
		a.health, a.status, a.reason = Unhealthy, "NotReady", "NodeNotReady"
		a.message = fmt.Sprintf("node %s is not ready", o.Metadata.Name)
		if ready != nil && ready.Message != "" {
			a.message += ": " + ready.Message
		}
		a.fix = fmt.Sprintf("bring back the agent of node %s (homeostat nodeagent --name %s); its pods are evicted after 5 minutes without it", o.Metadata.Name, o.Metadata.Name)
	case spec.Unschedulable:
		a.status = "Ready,SchedulingDisabled"
	}
	return a
}

// assessConditions judges a kind by the conditions Kubernetes'
// conventions name: a custom kind, a Service.
func assessConditions(o *object.Object) *assessment {
	var st struct {
		Phase      string             `json:"phase"`
		Conditions []object.Condition `json:"conditions"`
	}
	_ = o.DecodeStatus(&st)
	a := &assessment{health: Unknown, status: st.Phase}
	if st.Phase == "Failed" {
		a.health, a.reason = Unhealthy, "Failed"
	}
	// EndpointsReady is a Service's: whether each port has a ready pod.
	for _, typ := range []string{"Ready", "Available", "Complete", "Succeeded", "Established", "EndpointsReady"} {
		c := condition(st.Conditions, typ)
		if c == nil {
			continue
		}
		a.status = typ + "=" + c.Status
		switch c.Status {
		case object.ConditionTrue:
			a.health = Healthy
		case object.ConditionFalse:
			a.health, a.reason, a.message = Unhealthy, c.Reason, c.Message
		default:
			a.health, a.reason, a.message = Progressing, c.Reason, c.Message
		}
		break
	}
	if a.health == Unknown && len(st.Conditions) == 0 && st.Phase == "" {
		a.status = "no status"
	}
	return a
}
