package nodeagent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/controllers"
	"github.com/homeostat/homeostat/services/nodeagent"
	"github.com/homeostat/homeostat/testenv"
)

const web = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, command: [x]}]}
`

func running(e *testenv.Env, sel string) map[string]int {
	out := map[string]int{}
	for _, p := range e.Pods(sel) {
		if p.Status.Phase == kinds.PodRunning && p.Ready() && !p.Metadata.Deleting() {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestDeploymentRunsOnSimulatedNodes(t *testing.T) {
	e := testenv.New(t)
	e.Controllers()
	e.Scheduler("s")
	cap := kinds.ResourceList{"cpu": "4", "memory": "8Gi", "pods": "20"}
	for _, n := range []string{"n1", "n2", "n3"} {
		e.Node(n, cap, nil)
	}
	e.Apply(web)
	e.Eventually("6 running pods, 2 per node", 20*time.Second, func() bool {
		m := running(e, "app=web")
		return total(m) == 6 && m["n1"] == 2 && m["n2"] == 2 && m["n3"] == 2
	})
	e.Eventually("deployment available", 10*time.Second, func() bool {
		var st kinds.DeploymentStatus
		_ = e.Get("deployments", "web").DecodeStatus(&st)
		return st.AvailableReplicas == 6
	})
	// Each Running pod carries the conditions a user expects.
	p := e.Pods("app=web")[0]
	for _, c := range []string{kinds.PodScheduled, kinds.PodInitialized, kinds.ContainersReady, kinds.PodReady} {
		if cond := object.FindCondition(p.Status.Conditions, c); cond == nil || cond.Status != "True" {
			t.Errorf("pod %s condition %s: %+v", p.Metadata.Name, c, cond)
		}
	}
	if p.Status.StartTime == nil || p.Status.PodIP == "" {
		t.Errorf("pod status lacks start time or IP: %+v", p.Status)
	}
	// A deleted pod is stopped by its agent, removed, and replaced.
	victim := p.Metadata.Name
	d, err := e.C.Delete(e.Ctx, e.Res("pods"), "default", victim, client.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Metadata.DeletionTimestamp == nil {
		t.Fatal("deleting a running pod did not start a graceful deletion")
	}
	e.Eventually("the pod replaced and 6 running again", 20*time.Second, func() bool {
		for _, q := range e.Pods("app=web") {
			if q.Metadata.Name == victim && q.Metadata.UID == p.Metadata.UID {
				return false
			}
		}
		return total(running(e, "app=web")) == 6
	})
}

func TestUnreachableNodeIsTaintedAndEvicted(t *testing.T) {
	e := testenv.New(t)
	e.Controllers(func(c *controllers.Config) { c.NodeGrace, c.EvictAfter = 2*time.Second, 2*time.Second })
	e.Scheduler("s")
	cap := kinds.ResourceList{"cpu": "4", "memory": "8Gi", "pods": "20"}
	stopN1 := e.Node("n1", cap, nil)
	e.Node("n2", cap, nil)
	e.Apply(web)
	e.Eventually("pods on both nodes", 20*time.Second, func() bool {
		m := running(e, "app=web")
		return total(m) == 6 && m["n1"] > 0 && m["n2"] > 0
	})
	stopN1() // the agent dies: no more heartbeats
	e.Eventually("n1 unreachable", 20*time.Second, func() bool {
		n := e.Get("nodes", "n1")
		var spec kinds.NodeSpec
		var st kinds.NodeStatus
		_ = n.DecodeSpec(&spec)
		_ = n.DecodeStatus(&st)
		c := object.FindCondition(st.Conditions, "Ready")
		tainted := false
		for _, t := range spec.Taints {
			tainted = tainted || t.Key == kinds.TaintUnreachable
		}
		return c != nil && c.Status == "Unknown" && tainted
	})
	e.Eventually("every pod replaced on n2", 30*time.Second, func() bool {
		m := running(e, "app=web")
		return m["n2"] == 6 && len(e.Pods("app=web")) == 6
	})
	// The agent comes back: the node is Ready and untainted again.
	e.Node("n1", cap, nil)
	e.Eventually("n1 ready again", 20*time.Second, func() bool {
		var spec kinds.NodeSpec
		var st kinds.NodeStatus
		n := e.Get("nodes", "n1")
		_ = n.DecodeSpec(&spec)
		_ = n.DecodeStatus(&st)
		c := object.FindCondition(st.Conditions, "Ready")
		return c != nil && c.Status == "True" && len(spec.Taints) == 0
	})
}

// When every node's heartbeat lapses at once, the node lifecycle evicts
// nothing (the fault is likelier what carries the heartbeats); once one
// node posts again, the others' pods are evicted and replaced on it.
func TestEveryHeartbeatLapsedEvictsNothing(t *testing.T) {
	e := testenv.New(t)
	// Evicting after 5 s leaves the second node's heartbeat time to lapse
	// (2 s) however long stopping the first one takes on a busy machine.
	e.Controllers(func(c *controllers.Config) { c.NodeGrace, c.EvictAfter = 2*time.Second, 5*time.Second })
	e.Scheduler("s")
	cap := kinds.ResourceList{"cpu": "4", "memory": "8Gi", "pods": "20"}
	stopN1 := e.Node("n1", cap, nil)
	stopN2 := e.Node("n2", cap, nil)
	e.Apply(web)
	e.Eventually("pods on both nodes", 20*time.Second, func() bool {
		m := running(e, "app=web")
		return total(m) == 6 && m["n1"] > 0 && m["n2"] > 0
	})
	before := map[string]bool{}
	for _, p := range e.Pods("app=web") {
		before[p.Metadata.UID] = true
	}
	var stopping sync.WaitGroup
	for _, stop := range []func(){stopN1, stopN2} {
		stopping.Go(stop)
	}
	stopping.Wait()
	held := func(node string) bool {
		for _, ev := range e.List("events", "") {
			var involved struct {
				Name string `json:"name"`
			}
			var reason string
			if ev.Field("involvedObject", &involved) == nil && ev.Field("reason", &reason) == nil &&
				involved.Name == node && reason == "EvictionHeld" {
				return true
			}
		}
		return false
	}
	e.Eventually("evictions held on both nodes", 30*time.Second, func() bool { return held("n1") && held("n2") })
	for _, p := range e.Pods("app=web") {
		if !before[p.Metadata.UID] || p.Metadata.Deleting() {
			t.Fatalf("pod %s (uid %s) was replaced or is being deleted though every node lapsed at once", p.Metadata.Name, p.Metadata.UID)
		}
	}
	if n := len(e.Pods("app=web")); n != len(before) {
		t.Fatalf("%d pods after every node lapsed, %d before", n, len(before))
	}
	e.Node("n1", cap, nil)
	e.Eventually("every pod on n1 once it posts again", 60*time.Second, func() bool {
		m := running(e, "app=web")
		return m["n1"] == 6 && len(e.Pods("app=web")) == 6
	})
}

// TestSimulatedRuntimeAdoptsRunningPods: a simulated pod whose status says
// each of its containers runs is adopted as it is, reporting nothing, so a
// restarted host writes nothing for it; any other pod is run, reporting
// Running.
func TestSimulatedRuntimeAdoptsRunningPods(t *testing.T) {
	running := kinds.ContainerState{Running: &kinds.StateRunning{StartedAt: time.Unix(100, 0).UTC()}}
	waiting := kinds.ContainerState{Waiting: &kinds.StateWaiting{Reason: "ContainerCreating"}}
	two := []kinds.Container{{Name: "a"}, {Name: "b"}}
	for _, tc := range []struct {
		name    string
		status  kinds.PodStatus
		adopted bool
	}{
		{"new pod", kinds.PodStatus{}, false},
		{"every container running", kinds.PodStatus{Phase: kinds.PodRunning, ContainerStatuses: []kinds.ContainerStatus{{Name: "a", State: running}, {Name: "b", State: running}}}, true},
		{"pending", kinds.PodStatus{Phase: kinds.PodPending, ContainerStatuses: []kinds.ContainerStatus{{Name: "a", State: running}, {Name: "b", State: running}}}, false},
		{"a container waiting", kinds.PodStatus{Phase: kinds.PodRunning, ContainerStatuses: []kinds.ContainerStatus{{Name: "a", State: running}, {Name: "b", State: waiting}}}, false},
		{"a container missing", kinds.PodStatus{Phase: kinds.PodRunning, ContainerStatuses: []kinds.ContainerStatus{{Name: "a", State: running}}}, false},
		{"statuses of other containers", kinds.PodStatus{Phase: kinds.PodRunning, ContainerStatuses: []kinds.ContainerStatus{{Name: "a", State: running}, {Name: "c", State: running}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &kinds.Pod{Object: &object.Object{Metadata: object.Meta{Name: "p", Namespace: "default"}},
				Spec: kinds.PodSpec{Containers: two}, Status: tc.status}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // Run returns once it has reported what it reports at once
			var reports []kinds.PodStatus
			nodeagent.NewSimulated(0).Run(ctx, pod, func(st kinds.PodStatus) { reports = append(reports, st) })
			if tc.adopted {
				if len(reports) != 0 {
					t.Fatalf("an adopted pod reported %+v", reports)
				}
				return
			}
			if len(reports) != 1 || reports[0].Phase != kinds.PodRunning || len(reports[0].ContainerStatuses) != 2 {
				t.Fatalf("a pod to run reported %+v, want Running once", reports)
			}
		})
	}
}
