package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// Deployment condition reasons, as in Kubernetes.
const (
	reasonAvailable      = "MinimumReplicasAvailable"
	reasonUnavailable    = "MinimumReplicasUnavailable"
	reasonNewRSAvailable = "NewReplicaSetAvailable"
	reasonRSUpdated      = "ReplicaSetUpdated"
	reasonDeadline       = "ProgressDeadlineExceeded"
	reasonPaused         = "DeploymentPaused"
)

func (c *deployments) writeStatus(ctx context.Context, s *deploymentState) (reconcile.Result, error) {
	now := c.now().UTC().Truncate(time.Second)
	st := kinds.DeploymentStatus{ObservedGeneration: s.obj.Metadata.Generation, Conditions: s.status.Conditions}
	all := append([]*rsView(nil), s.old...)
	if s.newRS != nil {
		all = append(all, s.newRS)
		st.UpdatedReplicas = s.newRS.status.Replicas
	}
	for _, r := range all {
		st.Replicas += r.status.Replicas
		st.ReadyReplicas += r.status.ReadyReplicas
		st.AvailableReplicas += r.status.AvailableReplicas
	}
	st.UnavailableReplicas = max(0, s.replicas-st.AvailableReplicas)

	if st.AvailableReplicas >= s.replicas-s.unavail {
		object.SetCondition(&st.Conditions, object.Condition{Type: "Available", Status: object.ConditionTrue,
			Reason: reasonAvailable, Message: "Deployment has minimum availability."}, now)
	} else {
		object.SetCondition(&st.Conditions, object.Condition{Type: "Available", Status: object.ConditionFalse,
			Reason: reasonUnavailable, Message: "Deployment does not have minimum availability."}, now)
	}
	requeue := c.progressing(s, &st, now)
	if err := updateStatus(ctx, c.deploys.Store(), s.obj, st); err != nil {
		return reconcile.Result{}, fmt.Errorf("status: %w", err)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// progressing sets the Progressing condition: its lastUpdateTime moves
// whenever the rollout makes progress, and a rollout that makes none for
// progressDeadlineSeconds is marked failed. It returns when to check the
// deadline again.
func (c *deployments) progressing(s *deploymentState, st *kinds.DeploymentStatus, now time.Time) time.Duration {
	rsName := ""
	if s.newRS != nil {
		rsName = s.newRS.obj.Metadata.Name
	}
	old := object.FindCondition(s.status.Conditions, "Progressing")
	set := func(status, reason, msg string, touched bool) {
		cond := object.Condition{Type: "Progressing", Status: status, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
		if old != nil {
			if old.Status == status {
				cond.LastTransitionTime = old.LastTransitionTime
			}
			if !touched && old.Status == status && old.Reason == reason {
				cond.LastUpdateTime = old.LastUpdateTime
			}
		}
		st.Conditions = removeCondition(st.Conditions, "Progressing")
		st.Conditions = append(st.Conditions, cond)
	}
	if s.spec.Paused {
		set(object.ConditionUnknown, reasonPaused, "Deployment is paused", false)
		return 0
	}
	complete := s.newRS != nil && st.UpdatedReplicas == s.replicas && st.AvailableReplicas >= s.replicas && st.Replicas == s.replicas
	if complete {
		set(object.ConditionTrue, reasonNewRSAvailable, fmt.Sprintf("ReplicaSet %q has successfully progressed.", rsName), false)
		return 0
	}
	progressed := old == nil || st.UpdatedReplicas != s.status.UpdatedReplicas || st.AvailableReplicas != s.status.AvailableReplicas ||
		st.ReadyReplicas != s.status.ReadyReplicas || st.Replicas != s.status.Replicas || s.status.ObservedGeneration != s.obj.Metadata.Generation
	deadline := time.Duration(kinds.Int32(s.spec.ProgressDeadlineSeconds, 600)) * time.Second
	if !progressed && old != nil && old.Reason == reasonDeadline {
		set(object.ConditionFalse, reasonDeadline, old.Message, false)
		return 0
	}
	if !progressed && old != nil && now.Sub(old.LastUpdateTime) > deadline {
		set(object.ConditionFalse, reasonDeadline, fmt.Sprintf("ReplicaSet %q has timed out progressing.", rsName), false)
		return 0
	}
	set(object.ConditionTrue, reasonRSUpdated, fmt.Sprintf("ReplicaSet %q is progressing.", rsName), progressed)
	if c := object.FindCondition(st.Conditions, "Progressing"); c != nil {
		return max(time.Second, c.LastUpdateTime.Add(deadline).Sub(now)+time.Second)
	}
	return deadline
}

// claimObjects adopts and releases objects (ReplicaSets) like claim does pods.
func claimObjects(ctx context.Context, st *bus.Store, owner *object.Object, sel object.Selector, candidates []*object.Object) ([]*object.Object, error) {
	var out []*object.Object
	for _, c := range candidates {
		ref, controlled := c.Metadata.ControllerOf()
		matches := sel.Matches(c.Metadata.Labels)
		switch {
		case controlled && ref.UID == owner.Metadata.UID && matches:
			out = append(out, c)
		case controlled && ref.UID == owner.Metadata.UID:
			if err := setOwner(ctx, st, c, nil, owner.Metadata.UID); err != nil {
				return nil, err
			}
		case !controlled && matches && !c.Metadata.Deleting() && !owner.Metadata.Deleting():
			r := object.NewControllerRef(owner)
			if err := setOwner(ctx, st, c, &r, ""); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}
