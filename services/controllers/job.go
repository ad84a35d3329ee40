package controllers

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// jobs run pods to completion. Pods are named <job>-<n> with the lowest n
// not yet used; pods are never reused, so two reconciles at once with the
// same view pick the same names.
type jobs struct {
	jobs, pods *reconcile.Informer
	events     *reconcile.Recorder
	now        func() time.Time
	// backoff before replacing a failed pod: doubling from this per
	// failure, capped at six minutes (default 10s).
	backoff time.Duration
}

// retryWait is how long to wait before replacing a failed pod: backoff
// doubling per failure, counted from the latest failure.
func (c *jobs) retryWait(pods []*kinds.Pod, failed int32, now time.Time) time.Duration {
	if failed == 0 {
		return 0
	}
	var last time.Time
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			for _, t := range []*kinds.StateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t != nil && t.ExitCode != 0 && t.FinishedAt.After(last) {
					last = t.FinishedAt
				}
			}
		}
	}
	if last.IsZero() {
		return 0
	}
	d := min(c.backoff<<min(failed-1, 16), 6*time.Minute)
	return last.Add(d).Sub(now)
}

func (c *jobs) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o, ok := c.jobs.Get(req.Key)
	if !ok || o.Metadata.Deleting() {
		return reconcile.Result{}, nil
	}
	var spec kinds.JobSpec
	var status kinds.JobStatus
	if err := o.DecodeSpec(&spec); err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	_ = o.DecodeStatus(&status)
	now := c.now().UTC().Truncate(time.Second)
	pods := podsOf(c.pods, byOwner, o.Metadata.UID)
	active, succeeded, failed, ready := countJobPods(pods, spec.Template.Spec.RestartPolicy)
	st := kinds.JobStatus{StartTime: status.StartTime, CompletionTime: status.CompletionTime, Conditions: status.Conditions,
		ObservedGeneration: o.Metadata.Generation, Succeeded: succeeded, Failed: failed}
	if st.StartTime == nil && !spec.Suspend {
		st.StartTime = &now
	}
	completions := kinds.Int32(spec.Completions, 1)
	var requeue time.Duration
	var errs []error
	finish := func(t, reason, msg string) {
		object.SetCondition(&st.Conditions, object.Condition{Type: t, Status: object.ConditionTrue, Reason: reason, Message: msg}, now)
		for _, p := range active {
			errs = append(errs, deletePod(ctx, c.pods.Store(), p.Object))
		}
		active = nil
		if t == "Complete" && st.CompletionTime == nil {
			st.CompletionTime = &now
		}
		if !finished(status) {
			typ := kinds.EventNormal
			if t == "Failed" {
				typ = kinds.EventWarning
			}
			c.events.Event(ctx, o, typ, reason, "%s", msg)
		}
	}
	switch {
	case finished(status):
		for _, p := range active {
			errs = append(errs, deletePod(ctx, c.pods.Store(), p.Object))
		}
		active = nil
		requeue = c.expireFinished(ctx, o, spec, status, now, &errs)
	case failed > kinds.Int32(spec.BackoffLimit, 6):
		finish("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	case spec.ActiveDeadlineSeconds != nil && st.StartTime != nil &&
		now.Sub(*st.StartTime) >= time.Duration(*spec.ActiveDeadlineSeconds)*time.Second:
		finish("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
	case succeeded >= completions:
		finish("Complete", "Completed", "Job completed")
	case spec.Suspend:
		for _, p := range active {
			errs = append(errs, deletePod(ctx, c.pods.Store(), p.Object))
		}
		active = nil
	default:
		want := min(kinds.Int32(spec.Parallelism, 1), completions-succeeded)
		if wait := c.retryWait(pods, failed, now); wait > 0 && int32(len(active)) < want {
			// Failed pods are replaced after a back-off, as in Kubernetes.
			want, requeue = int32(len(active)), wait
		}
		active = c.adjust(ctx, o, spec, pods, active, want, &errs)
		if spec.ActiveDeadlineSeconds != nil && st.StartTime != nil {
			dl := st.StartTime.Add(time.Duration(*spec.ActiveDeadlineSeconds) * time.Second).Sub(now)
			requeue = sooner(requeue, dl)
		}
	}
	st.Active, st.Ready = int32(len(active)), ready
	requeue = sooner(requeue, untilExpiry(spec, status, st))
	if err := updateStatus(ctx, c.jobs.Store(), o, st); err != nil {
		errs = append(errs, err)
	}
	return reconcile.Result{RequeueAfter: max(requeue, 0)}, errors.Join(errs...)
}

// countJobPods sorts a job's pods into active ones and counts outcomes;
// with restartPolicy OnFailure, container restarts count as failures.
func countJobPods(pods []*kinds.Pod, policy string) (active []*kinds.Pod, succeeded, failed, ready int32) {
	for _, pod := range pods {
		switch {
		case pod.Status.Phase == kinds.PodSucceeded:
			succeeded++
		case pod.Status.Phase == kinds.PodFailed:
			failed++
		case !pod.Metadata.Deleting():
			active = append(active, pod)
			if pod.Ready() {
				ready++
			}
		}
		if policy == kinds.RestartOnFailure {
			failed += pod.Restarts()
		}
	}
	return active, succeeded, failed, ready
}

func finished(st kinds.JobStatus) bool {
	for _, t := range []string{"Complete", "Failed"} {
		if c := object.FindCondition(st.Conditions, t); c != nil && c.Status == object.ConditionTrue {
			return true
		}
	}
	return false
}

// adjust creates or deletes pods to have want active ones.
func (c *jobs) adjust(ctx context.Context, o *object.Object, spec kinds.JobSpec, pods, active []*kinds.Pod, want int32, errs *[]error) []*kinds.Pod {
	used := map[string]bool{}
	for _, p := range pods {
		used[p.Metadata.Name] = true
	}
	var maker *podMaker
	for n := 0; int32(len(active)) < want; n++ {
		name := truncName(o.Metadata.Name, "-"+strconv.Itoa(n))
		if used[name] {
			continue
		}
		if maker == nil {
			// The template's spec is encoded once for the pods of a pass.
			m, err := newPodMaker(o, spec.Template, o.Metadata.Namespace,
				map[string]string{LabelJobName: o.Metadata.Name, LabelControllerUID: o.Metadata.UID})
			if err != nil {
				*errs = append(*errs, err)
				break
			}
			maker = m
		}
		pod := maker.pod(name)
		if _, err := createIfAbsent(ctx, c.pods.Store(), pod); err != nil {
			c.events.Event(ctx, o, kinds.EventWarning, "FailedCreate", "Error creating pod %s: %v", name, err)
			*errs = append(*errs, err)
			break
		}
		c.events.Event(ctx, o, kinds.EventNormal, "SuccessfulCreate", "Created pod: %s", name)
		p, _ := kinds.DecodePod(pod)
		active = append(active, p)
	}
	if extra := int32(len(active)) - want; extra > 0 {
		sort.Slice(active, func(i, j int) bool { return active[i].Metadata.Name > active[j].Metadata.Name })
		for _, p := range active[:extra] {
			*errs = append(*errs, deletePod(ctx, c.pods.Store(), p.Object))
		}
		active = active[extra:]
	}
	return active
}

// untilExpiry is when the pass that finishes a Job (its status before,
// st after) asks to look at it again, for its ttlSecondsAfterFinished:
// its own status write does not bring the Job back (the reconcile
// runtime passes over it), and nothing else may change.
func untilExpiry(spec kinds.JobSpec, status, st kinds.JobStatus) time.Duration {
	if !finished(st) || finished(status) || spec.TTLSecondsAfterFinished == nil {
		return 0
	}
	return max(time.Duration(*spec.TTLSecondsAfterFinished)*time.Second, time.Millisecond)
}

// expireFinished deletes a finished job after ttlSecondsAfterFinished.
func (c *jobs) expireFinished(ctx context.Context, o *object.Object, spec kinds.JobSpec, st kinds.JobStatus, now time.Time, errs *[]error) time.Duration {
	if spec.TTLSecondsAfterFinished == nil {
		return 0
	}
	end := now
	if st.CompletionTime != nil {
		end = *st.CompletionTime
	} else {
		for _, t := range []string{"Complete", "Failed"} {
			if c := object.FindCondition(st.Conditions, t); c != nil {
				end = c.LastTransitionTime
			}
		}
	}
	at := end.Add(time.Duration(*spec.TTLSecondsAfterFinished) * time.Second)
	if now.Before(at) {
		return at.Sub(now)
	}
	*errs = append(*errs, deletePod(ctx, c.jobs.Store(), o))
	return 0
}
