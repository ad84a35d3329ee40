package controllers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

const deployYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: %d
  strategy: %s
  revisionHistoryLimit: 2
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: c, command: [sleep, "%[4]s"]}]}
`

func deployment(name string, replicas int, strategy, version string) string {
	return fmt.Sprintf(deployYAML, name, replicas, strategy, version)
}

func deployStatus(e *env, name string) (kinds.DeploymentStatus, *object.Object) {
	var st kinds.DeploymentStatus
	o := e.get("deployments", name)
	_ = o.DecodeStatus(&st)
	return st, o
}

func cond(st kinds.DeploymentStatus, t string) object.Condition {
	if c := object.FindCondition(st.Conditions, t); c != nil {
		return *c
	}
	return object.Condition{}
}

func rolledOut(e *env, name string, replicas int32) func() bool {
	return func() bool {
		st, o := deployStatus(e, name)
		return st.ObservedGeneration == o.Metadata.Generation && st.UpdatedReplicas == replicas &&
			st.AvailableReplicas == replicas && st.Replicas == replicas &&
			cond(st, "Progressing").Reason == "NewReplicaSetAvailable" && cond(st, "Available").Status == "True"
	}
}

func replicaSets(e *env, app string) map[string]string {
	out := map[string]string{}
	for _, rs := range e.list("rs", "app="+app) {
		var spec kinds.ReplicaSetSpec
		_ = rs.DecodeSpec(&spec)
		out[rs.Metadata.Annotations["deployment.kubernetes.io/revision"]] = fmt.Sprintf("%s=%d", rs.Metadata.Name, kinds.Int32(spec.Replicas, 0))
	}
	return out
}

func TestDeploymentRollingUpdateAndRollback(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	stop := e.runPods("app=web")
	defer stop()
	e.apply(deployment("web", 4, "{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", "100"))
	poll.Until(t, "first rollout", 15*time.Second, rolledOut(e, "web", 4))
	first := replicaSets(e, "web")
	if len(first) != 1 || !strings.HasSuffix(first["1"], "=4") {
		t.Fatalf("after the first rollout: %v", first)
	}

	// Watch the pod count during the update: at most replicas+maxSurge exist.
	peak := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !rolledOut(e, "web", 4)() || len(replicaSets(e, "web")) < 2 {
			peak = max(peak, len(activePods(e.list("pods", "app=web"))))
		}
	}()
	e.apply(deployment("web", 4, "{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", "200"))
	<-done
	poll.Until(t, "second rollout", 15*time.Second, rolledOut(e, "web", 4))
	if peak > 5 {
		t.Fatalf("saw %d pods during a rollout with 4 replicas and maxSurge 1", peak)
	}
	second := replicaSets(e, "web")
	if !strings.HasSuffix(second["1"], "=0") || !strings.HasSuffix(second["2"], "=4") {
		t.Fatalf("after the update: %v", second)
	}

	// Rolling back to the first template reuses its ReplicaSet as revision 3.
	e.apply(deployment("web", 4, "{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", "100"))
	poll.Until(t, "rollback", 15*time.Second, func() bool {
		rs := replicaSets(e, "web")
		return rolledOut(e, "web", 4)() && rs["3"] == strings.Replace(first["1"], "=4", "=4", 1) && strings.HasSuffix(rs["2"], "=0")
	})
}

// A rolling update whose new pods never become ready takes one old pod
// away (maxUnavailable of 5 at 25%) and no more: each write to the old
// ReplicaSet brings the Deployment back before the old one's status shows
// the pod gone, and that status must not let it take another.
func TestDeploymentRollingUpdateKeepsMinAvailable(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	stop := e.runPods("app=web")
	e.apply(deployment("web", 5, "{type: RollingUpdate}", "100"))
	poll.Until(t, "first rollout", 15*time.Second, rolledOut(e, "web", 5))
	stop()

	e.apply(deployment("web", 5, "{type: RollingUpdate}", "200"))
	// Settled: each ReplicaSet's status counts the pods its spec asks
	// for, and the new one has grown to at least 3 (the surge lets it).
	var sizes map[string]string
	poll.Until(t, "the rollout to stall on new pods that are not ready", 15*time.Second, func() bool {
		sizes = replicaSets(e, "web")
		old := e.list("rs", "app=web")
		for _, rs := range old {
			var spec kinds.ReplicaSetSpec
			var st kinds.ReplicaSetStatus
			_ = rs.DecodeSpec(&spec)
			_ = rs.DecodeStatus(&st)
			if st.ObservedGeneration != rs.Metadata.Generation || st.Replicas != kinds.Int32(spec.Replicas, 0) {
				return false
			}
		}
		return len(sizes) == 2 && !strings.HasSuffix(sizes["2"], "=1") && !strings.HasSuffix(sizes["2"], "=2")
	})
	if !strings.HasSuffix(sizes["1"], "=4") || !strings.HasSuffix(sizes["2"], "=3") {
		t.Fatalf("with no new pod ready, the ReplicaSets are %v, not the old one at 4 (5 less 1 unavailable) and the new at 3 (7 less 4)", sizes)
	}
	stop = e.runPods("app=web")
	defer stop()
	poll.Until(t, "the rollout once the new pods are ready", 15*time.Second, rolledOut(e, "web", 5))
}

func TestDeploymentRecreate(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	stop := e.runPods("app=rec")
	defer stop()
	e.apply(deployment("rec", 2, "{type: Recreate}", "1"))
	poll.Until(t, "first rollout", 15*time.Second, rolledOut(e, "rec", 2))
	oldNames := map[string]bool{}
	for _, p := range e.list("pods", "app=rec") {
		oldNames[p.Metadata.Name] = true
	}
	mixed := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !(rolledOut(e, "rec", 2)() && len(replicaSets(e, "rec")) == 2) {
			oldSeen, newSeen := false, false
			for _, p := range e.list("pods", "app=rec") {
				if oldNames[p.Metadata.Name] {
					oldSeen = true
				} else {
					newSeen = true
				}
			}
			mixed = mixed || (oldSeen && newSeen)
		}
	}()
	e.apply(deployment("rec", 2, "{type: Recreate}", "2"))
	<-done
	if mixed {
		t.Fatal("Recreate ran old and new pods at the same time")
	}
}

func TestDeploymentPauseResumeAndHistoryLimit(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	stop := e.runPods("app=p")
	defer stop()
	strategy := "{type: RollingUpdate}"
	e.apply(deployment("p", 2, strategy, "1"))
	poll.Until(t, "first rollout", 15*time.Second, rolledOut(e, "p", 2))
	e.patch("deployments", "p", `{"spec":{"paused":true}}`)
	e.apply(strings.Replace(deployment("p", 2, strategy, "2"), "revisionHistoryLimit: 2", "revisionHistoryLimit: 2\n  paused: true", 1))
	poll.Until(t, "paused condition", 10*time.Second, func() bool {
		st, _ := deployStatus(e, "p")
		return cond(st, "Progressing").Reason == "DeploymentPaused"
	})
	if n := len(replicaSets(e, "p")); n != 1 {
		t.Fatalf("a paused deployment rolled out: %d ReplicaSets", n)
	}
	// Paused, it still scales.
	e.patch("deployments", "p", `{"spec":{"replicas":3}}`)
	poll.Until(t, "3 pods while paused", 10*time.Second, func() bool { return len(activePods(e.list("pods", "app=p"))) == 3 })
	if n := len(replicaSets(e, "p")); n != 1 {
		t.Fatalf("scaling a paused deployment rolled it out: %d ReplicaSets", n)
	}
	e.patch("deployments", "p", `{"spec":{"replicas":2}}`)
	e.patch("deployments", "p", `{"spec":{"paused":false}}`)
	poll.Until(t, "rollout after resume", 15*time.Second, func() bool { return rolledOut(e, "p", 2)() && len(replicaSets(e, "p")) == 2 })
	for _, v := range []string{"3", "4", "5"} {
		e.apply(deployment("p", 2, strategy, v))
		poll.Until(t, "rollout "+v, 15*time.Second, func() bool {
			rs := replicaSets(e, "p")
			return rolledOut(e, "p", 2)() && strings.HasSuffix(rs[v], "=2")
		})
	}
	poll.Until(t, "history limited to 2 old ReplicaSets", 10*time.Second, func() bool { return len(replicaSets(e, "p")) == 3 })
}

func TestDeploymentProgressDeadline(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(strings.Replace(deployment("slow", 1, "{type: RollingUpdate}", "1"), "revisionHistoryLimit: 2", "progressDeadlineSeconds: 1", 1))
	poll.Until(t, "deadline exceeded", 15*time.Second, func() bool {
		st, _ := deployStatus(e, "slow")
		c := cond(st, "Progressing")
		return c.Status == "False" && c.Reason == "ProgressDeadlineExceeded"
	})
}

// A Deployment adopts the orphan ReplicaSets its selector matches, leaves
// those it does not match alone, and releases one relabelled away.
func TestDeploymentAdoptsAndReleasesReplicaSets(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	rs := func(name, app string) string {
		return `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: ` + name + `, labels: {app: ` + app + `}}
spec:
  replicas: 0
  selector: {matchLabels: {app: ` + app + `}}
  template:
    metadata: {labels: {app: ` + app + `}}
    spec: {containers: [{name: c, command: [sleep, "1"]}]}
`
	}
	e.apply(rs("stray", "adopt"))
	e.apply(rs("other", "elsewhere"))
	e.apply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: adopt}
spec:
  replicas: 1
  selector: {matchLabels: {app: adopt}}
  template:
    metadata: {labels: {app: adopt}}
    spec: {containers: [{name: c, command: [sleep, "1000"]}]}
`)
	controller := func(name string) string {
		ref, ok := e.get("rs", name).Metadata.ControllerOf()
		if !ok {
			return ""
		}
		return ref.Kind + "/" + ref.Name
	}
	poll.Until(t, "the stray ReplicaSet adopted", 10*time.Second, func() bool {
		return controller("stray") == "Deployment/adopt"
	})
	e.patch("rs", "stray", `{"metadata":{"labels":{"app":"gone"}}}`)
	poll.Until(t, "the relabelled ReplicaSet released", 10*time.Second, func() bool {
		return controller("stray") == ""
	})
	if c := controller("other"); c != "" {
		t.Fatalf("a ReplicaSet the selector does not match has controller %s", c)
	}
}
