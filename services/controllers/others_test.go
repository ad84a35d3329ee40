package controllers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/controllers"
	"github.com/homeostat/homeostat/testenv/poll"
)

const jobYAML = `apiVersion: batch/v1
kind: Job
metadata: {name: %s}
spec:
  completions: %d
  parallelism: %d
  backoffLimit: %d
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, command: ["true"]}]
`

func jobStatus(e *env, name string) kinds.JobStatus {
	var st kinds.JobStatus
	_ = e.get("jobs", name).DecodeStatus(&st)
	return st
}

func jobCond(st kinds.JobStatus, t string) bool {
	c := object.FindCondition(st.Conditions, t)
	return c != nil && c.Status == "True"
}

// finishPods plays the node agent for a job, until the returned stop is
// called: every active pod ends with phase.
func finishPods(e *env, job, phase string) (stop func()) {
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(20 * time.Millisecond):
			}
			l, err := e.c.List(e.ctx, e.res("pods"), "default", client.ListOptions{LabelSelector: "job-name=" + job})
			if err != nil {
				continue
			}
			for _, p := range l.Items {
				var st kinds.PodStatus
				_ = p.DecodeStatus(&st)
				if st.Phase == "" && !p.Metadata.Deleting() {
					e.setPodStatus(p, phase, false)
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

func TestJobCompletesWithParallelism(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(fmt.Sprintf(jobYAML, "batch", 5, 2, 3))
	// The status follows the pods' creation: it is waited for, not read
	// the moment they appear.
	poll.Until(t, "two pods in parallel, in the status too", 10*time.Second, func() bool {
		st := jobStatus(e, "batch")
		return len(e.list("pods", "job-name=batch")) == 2 && st.Active == 2 && st.StartTime != nil
	})
	stop := finishPods(e, "batch", kinds.PodSucceeded)
	defer stop()
	poll.Until(t, "Complete", 15*time.Second, func() bool {
		st := jobStatus(e, "batch")
		return jobCond(st, "Complete") && st.Succeeded == 5 && st.Active == 0 && st.CompletionTime != nil
	})
	if n := len(e.list("pods", "job-name=batch")); n != 5 {
		t.Fatalf("a job of 5 completions made %d pods", n)
	}
}

func TestJobFailsPastBackoffLimit(t *testing.T) {
	e := newEnv(t)
	e.controllers(func(c *controllers.Config) { c.JobBackoff = 300 * time.Millisecond })
	e.apply(fmt.Sprintf(jobYAML, "doomed", 1, 1, 2))
	stop := finishPods(e, "doomed", kinds.PodFailed)
	defer stop()
	poll.Until(t, "Failed", 15*time.Second, func() bool {
		st := jobStatus(e, "doomed")
		c := object.FindCondition(st.Conditions, "Failed")
		return c != nil && c.Reason == "BackoffLimitExceeded" && st.Failed == 3
	})
}

// TestJobGoesAfterItsTimeToLive: a finished Job with ttlSecondsAfterFinished
// is deleted once that time is up, though nothing changes after the pass
// that finished it.
func TestJobGoesAfterItsTimeToLive(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(`apiVersion: batch/v1
kind: Job
metadata: {name: brief}
spec:
  ttlSecondsAfterFinished: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, command: ["true"]}]
`)
	stop := finishPods(e, "brief", kinds.PodSucceeded)
	defer stop()
	// Complete lasts a second only: the deletion is what is waited for.
	poll.Until(t, "the Job deleted after its time to live", 20*time.Second, func() bool {
		_, err := e.c.Get(e.ctx, e.res("jobs"), "default", "brief")
		return client.IsNotFound(err)
	})
}

func TestDaemonSetFollowsNodes(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	for _, n := range []string{"n1", "n2", "n3"} {
		labels := "{disk: ssd}"
		taints := "[]"
		if n == "n3" {
			labels = "{disk: hdd}"
		}
		if n == "n2" {
			taints = "[{key: dedicated, value: db, effect: NoSchedule}]"
		}
		e.apply(fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: %s}\nspec: {taints: %s}\n", n, labels, taints))
	}
	e.apply(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: c, command: [sleep, "100"]}]
`)
	nodesOf := func() map[string]bool {
		out := map[string]bool{}
		for _, p := range activePods(e.list("pods", "app=agent")) {
			var spec kinds.PodSpec
			_ = p.DecodeSpec(&spec)
			out[spec.NodeName] = true
		}
		return out
	}
	// n2's taint is not tolerated, n3 has the wrong disk.
	poll.Until(t, "one pod, on n1", 10*time.Second, func() bool { m := nodesOf(); return len(m) == 1 && m["n1"] })
	e.patch("nodes", "n3", `{"metadata":{"labels":{"disk":"ssd"}}}`)
	poll.Until(t, "a pod on n3 too", 10*time.Second, func() bool { m := nodesOf(); return len(m) == 2 && m["n3"] })
	if err := e.c.Do(e.ctx, http.MethodDelete, e.res("nodes").Path("", "n1"), nil, "", nil); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the pod of the removed node gone", 10*time.Second, func() bool { m := nodesOf(); return len(m) == 1 && m["n3"] })
}

// TestDaemonSetCountsPodsAvailableAfterMinReadySeconds: a daemon pod
// that became ready counts as available once it has been ready for
// minReadySeconds, though nothing changes at that moment.
func TestDaemonSetCountsPodsAvailableAfterMinReadySeconds(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n")
	e.apply(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: slow}
spec:
  minReadySeconds: 1
  selector: {matchLabels: {app: slow}}
  template:
    metadata: {labels: {app: slow}}
    spec:
      containers: [{name: c, command: [sleep, "100"]}]
`)
	poll.Until(t, "the daemon pod", 10*time.Second, func() bool { return len(e.list("pods", "app=slow")) == 1 })
	// Ready from now on (setPodStatus makes it ready an hour ago).
	ready := fmt.Sprintf(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q}]}}`,
		time.Now().UTC().Format(time.RFC3339))
	pod := e.list("pods", "app=slow")[0]
	if err := e.c.Do(e.ctx, http.MethodPatch, e.res("pods").Path("default", pod.Metadata.Name)+"/status", []byte(ready), "application/merge-patch+json", nil); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the pod available", 15*time.Second, func() bool {
		var st kinds.DaemonSetStatus
		_ = e.get("daemonsets", "slow").DecodeStatus(&st)
		return st.NumberReady == 1 && st.NumberAvailable == 1
	})
}

func TestGarbageCollectionPolicies(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(fmt.Sprintf(rsYAML, "bg", 2))
	e.apply(fmt.Sprintf(rsYAML, "orph", 2))
	e.apply(fmt.Sprintf(rsYAML, "fg", 2))
	for _, app := range []string{"bg", "orph", "fg"} {
		poll.Until(t, app+" pods", 10*time.Second, func() bool { return len(e.list("pods", "app="+app)) == 2 })
	}
	// Background: the owner goes at once, the collector removes its pods.
	if _, err := e.c.Delete(e.ctx, e.res("rs"), "default", "bg", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "background cascade", 10*time.Second, func() bool { return len(e.list("pods", "app=bg")) == 0 })
	// Orphan: the pods stay, without an owner, and with their status
	// whole, though the controllers cache running pods lean.
	stop := e.runPods("app=orph")
	defer stop()
	poll.Until(t, "orph pods running", 10*time.Second, func() bool {
		n := 0
		for _, p := range e.list("pods", "app=orph") {
			var st kinds.PodStatus
			if p.DecodeStatus(&st) == nil && st.Phase == kinds.PodRunning {
				n++
			}
		}
		return n == 2
	})
	if _, err := e.c.Delete(e.ctx, e.res("rs"), "default", "orph", client.DeleteOptions{PropagationPolicy: "Orphan"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "orphaned pods and the owner gone", 10*time.Second, func() bool {
		if _, err := e.c.Get(e.ctx, e.res("rs"), "default", "orph"); !client.IsNotFound(err) {
			return false
		}
		ps := e.list("pods", "app=orph")
		for _, p := range ps {
			if len(p.Metadata.OwnerReferences) > 0 {
				return false
			}
		}
		return len(ps) == 2
	})
	for _, p := range e.list("pods", "app=orph") {
		var st kinds.PodStatus
		if err := p.DecodeStatus(&st); err != nil || st.Phase != kinds.PodRunning || len(st.Conditions) != 1 {
			t.Fatalf("pod %s was orphaned with status %s", p.Metadata.Name, p.Status)
		}
	}
	// Foreground: the owner stays until its pods are gone.
	if _, err := e.c.Delete(e.ctx, e.res("rs"), "default", "fg", client.DeleteOptions{PropagationPolicy: "Foreground"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "foreground cascade", 10*time.Second, func() bool {
		_, err := e.c.Get(e.ctx, e.res("rs"), "default", "fg")
		return client.IsNotFound(err) && len(e.list("pods", "app=fg")) == 0
	})
}

// A running pod deleted in the foreground, for it has a dependent of its
// own, keeps its status whole through the collector's writes: the
// finalizer added, and dropped once the dependent is gone, which removes
// the pod with its last state.
func TestForegroundDeletionKeepsRunningPodsWhole(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(fmt.Sprintf(rsYAML, "fgw", 1))
	stop := e.runPods("app=fgw")
	defer stop()
	var pod *object.Object
	poll.Until(t, "the pod running", 10*time.Second, func() bool {
		ps := e.list("pods", "app=fgw")
		if len(ps) != 1 {
			return false
		}
		var st kinds.PodStatus
		pod = ps[0]
		return pod.DecodeStatus(&st) == nil && st.Phase == kinds.PodRunning
	})
	whole := func(o *object.Object) bool {
		var st kinds.PodStatus
		return o.DecodeStatus(&st) == nil && st.Phase == kinds.PodRunning && len(st.Conditions) == 1
	}
	// A dependent that stays until its own finalizer is taken off.
	held := `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: %s
  finalizers: [test.homeostat.io/hold]
  ownerReferences: [{apiVersion: v1, kind: Pod, name: %s, uid: %s}]
spec:
  replicas: 0
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: c, command: [sleep, "1000"]}]}
`
	e.apply(fmt.Sprintf(held, "held", pod.Metadata.Name, pod.Metadata.UID))
	// One whose owner never was: once the collector has removed it, it
	// has seen the first, made before it.
	e.apply(strings.Replace(fmt.Sprintf(held, "probe", "never", "no-such-uid"), "  finalizers: [test.homeostat.io/hold]\n", "", 1))
	poll.Until(t, "the collector caught up with the ReplicaSets", 10*time.Second, func() bool {
		_, err := e.c.Get(e.ctx, e.res("rs"), "default", "probe")
		return client.IsNotFound(err)
	})
	pods, err := e.conn.Store(e.ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	events, err := pods.Watch(e.ctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Delete(e.ctx, e.res("rs"), "default", "fgw", client.DeleteOptions{PropagationPolicy: "Foreground"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the pod deleting in the foreground", 10*time.Second, func() bool {
		p := e.get("pods", pod.Metadata.Name)
		return p.Metadata.Deleting() && p.Metadata.HasFinalizer(controllers.FinalizerForeground)
	})
	if p := e.get("pods", pod.Metadata.Name); !whole(p) {
		t.Fatalf("the pod's finalizer was added over status %s", p.Status)
	}
	e.patch("rs", "held", `{"metadata":{"finalizers":null}}`)
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type != bus.Deleted || ev.Key != pod.Key() {
				continue
			}
			if ev.Object == nil {
				t.Fatal("the pod went with no last state")
			}
			if !whole(ev.Object) {
				t.Fatalf("the pod went with its last status %s", ev.Object.Status)
			}
			return
		case <-deadline:
			t.Fatal("the pod was not removed")
		}
	}
}

func TestDeletingNamespaceDeletesItsContent(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: scratch}\n")
	dep := deployment("inns", 2, "{type: RollingUpdate}", "1")
	docs := "metadata: {name: inns, namespace: scratch}"
	dep = strings.Replace(dep, "metadata: {name: inns}", docs, 1)
	e.apply(dep)
	pods := func() int {
		l, err := e.c.List(e.ctx, e.res("pods"), "scratch", client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	poll.Until(t, "pods in scratch", 10*time.Second, func() bool { return pods() == 2 })
	if _, err := e.c.Delete(e.ctx, e.res("ns"), "", "scratch", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the namespace and its content gone", 15*time.Second, func() bool {
		_, err := e.c.Get(e.ctx, e.res("ns"), "", "scratch")
		return client.IsNotFound(err) && pods() == 0
	})
}

// A failed job pod is replaced after a back-off that doubles per failure.
func TestJobBacksOffBetweenFailures(t *testing.T) {
	e := newEnv(t)
	const base = 400 * time.Millisecond
	e.controllers(func(c *controllers.Config) { c.JobBackoff = base })
	e.apply(fmt.Sprintf(jobYAML, "flaky", 1, 1, 2))
	seen := map[string]time.Time{}   // pod name -> first seen
	failed := map[string]time.Time{} // pod name -> failure written
	deadline := time.Now().Add(20 * time.Second)
	for len(failed) < 3 && time.Now().Before(deadline) {
		for _, p := range e.list("pods", "job-name=flaky") {
			name := p.Metadata.Name
			if _, ok := seen[name]; !ok {
				seen[name] = time.Now()
			}
			if _, ok := failed[name]; !ok {
				e.setPodStatus(p, kinds.PodFailed, false)
				failed[name] = time.Now()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(failed) != 3 {
		t.Fatalf("%d pods failed, want 3 (backoffLimit 2)", len(failed))
	}
	for i, want := range []time.Duration{base, 2 * base} {
		prev, next := fmt.Sprintf("flaky-%d", i), fmt.Sprintf("flaky-%d", i+1)
		if gap := seen[next].Sub(failed[prev]); gap < want-50*time.Millisecond {
			t.Errorf("%s appeared %s after %s failed, want at least %s", next, gap, prev, want)
		}
	}
}

// The collector follows custom kinds: a Widget owned by a ReplicaSet goes
// with it, and a pod owned by a Widget goes with the Widget.
func TestGarbageCollectionOfCustomKinds(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(`apiVersion: homeostat.io/v1
kind: ResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  version: v1
  kind: Widget
  plural: widgets
  schema: {type: object}
`)
	e.apply(fmt.Sprintf(rsYAML, "owner", 0))
	rs := e.get("rs", "owner")
	e.c.Refresh()
	e.apply(fmt.Sprintf(`apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: owner, uid: %s}]
spec: {}
`, rs.Metadata.UID))
	w := e.get("widgets", "w")
	e.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: of-widget
  ownerReferences: [{apiVersion: example.com/v1, kind: Widget, name: w, uid: %s}]
spec: {containers: [{name: c, command: [x]}]}
`, w.Metadata.UID))
	if _, err := e.c.Delete(e.ctx, e.res("rs"), "default", "owner", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the widget and its pod collected", 15*time.Second, func() bool {
		_, errW := e.c.Get(e.ctx, e.res("widgets"), "default", "w")
		_, errP := e.c.Get(e.ctx, e.res("pods"), "default", "of-widget")
		return client.IsNotFound(errW) && client.IsNotFound(errP)
	})
}

// Deleting a ServiceAccount deletes its Tokens.
func TestTokensGoWithTheirServiceAccount(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: bot}\n")
	for range 2 {
		if err := e.c.Do(e.ctx, "POST", "/api/v1/namespaces/default/serviceaccounts/bot/token", []byte(`{}`), "application/json", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.list("tokens", "homeostat.io/service-account=bot")); n != 2 {
		t.Fatalf("%d tokens, want 2", n)
	}
	if _, err := e.c.Delete(e.ctx, e.res("serviceaccounts"), "default", "bot", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the tokens collected", 15*time.Second, func() bool {
		return len(e.list("tokens", "homeostat.io/service-account=bot")) == 0
	})
}
