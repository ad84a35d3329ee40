package nodeagent_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
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

// webOnTwoNodes runs web's six pods over nodes n1 and n2, with a node
// grace of 2 s and pods evicted evictAfter later; gates, when given, carry
// n1's and n2's heartbeats.
func webOnTwoNodes(t *testing.T, evictAfter time.Duration, gates ...*gatedHeartbeats) (e *testenv.Env, cap kinds.ResourceList, stopN1, stopN2 func()) {
	e = testenv.New(t)
	e.Controllers(func(c *controllers.Config) { c.NodeGrace, c.EvictAfter = 2*time.Second, evictAfter })
	e.Scheduler("s")
	cap = kinds.ResourceList{"cpu": "4", "memory": "8Gi", "pods": "20"}
	stops := make([]func(), 2)
	for i, name := range []string{"n1", "n2"} {
		var mutate []func(*nodeagent.Config)
		if i < len(gates) {
			leases, err := e.Client().Leases(e.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			gates[i].Heartbeats = leases
			mutate = append(mutate, func(c *nodeagent.Config) { c.Heartbeats = gates[i] })
		}
		stops[i] = e.Node(name, cap, nil, mutate...)
	}
	stopN1, stopN2 = stops[0], stops[1]
	e.Apply(web)
	e.Eventually("pods on both nodes", 20*time.Second, func() bool {
		m := running(e, "app=web")
		return total(m) == 6 && m["n1"] > 0 && m["n2"] > 0
	})
	return e, cap, stopN1, stopN2
}

func TestUnreachableNodeIsTaintedAndEvicted(t *testing.T) {
	e, cap, stopN1, _ := webOnTwoNodes(t, 2*time.Second)
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
	e.Eventually("n1 ready again", 20*time.Second, func() bool { return nodeReady(e, "n1") })
}

// When every node's heartbeat lapses at once, the node lifecycle evicts
// nothing (the fault is likelier what carries the heartbeats); once one
// node posts again, the others' pods are evicted and replaced on it.
func TestEveryHeartbeatLapsedEvictsNothing(t *testing.T) {
	// Both agents stop together; evicting after 5 s leaves both heartbeats
	// time to lapse (2 s) before either node's timeout, however busy the
	// machine.
	e, cap, stopN1, stopN2 := webOnTwoNodes(t, 5*time.Second)
	before := podUIDs(e)
	var stopping sync.WaitGroup
	for _, stop := range []func(){stopN1, stopN2} {
		stopping.Go(stop)
	}
	stopping.Wait()
	e.Eventually("evictions held on both nodes", 30*time.Second, func() bool { return evictionHeld(e, "n1") && evictionHeld(e, "n2") })
	samePods(t, e, before, "every node lapsed at once")
	e.Node("n1", cap, nil)
	e.Eventually("every pod on n1 once it posts again", 60*time.Second, func() bool {
		m := running(e, "app=web")
		return m["n1"] == 6 && len(e.Pods("app=web")) == 6
	})
}

// After every node's heartbeat lapsed at once, a node whose agent comes
// back a little after the others' has the whole eviction timeout from
// then: its pods, which never stopped, stay.
func TestHeldNodesGetTheirTimeBack(t *testing.T) {
	gates := []*gatedHeartbeats{{}, {}}
	// Both nodes silent past the eviction timeout (a hold is recorded
	// when a silent node's timeout is due), then n2's agent back 3 s after
	// n1's: well within 15 s of the silence's end, however busy the
	// machine.
	e, _, _, _ := webOnTwoNodes(t, 15*time.Second, gates...)
	before := podUIDs(e)
	for _, g := range gates {
		g.closed.Store(true) // as when no API replica serves the relay
	}
	e.Eventually("evictions held on both nodes", 30*time.Second, func() bool { return evictionHeld(e, "n1") && evictionHeld(e, "n2") })
	gates[0].closed.Store(false)
	e.Eventually("n1 ready again", 20*time.Second, func() bool { return nodeReady(e, "n1") })
	// n2's agent stays away a while longer (the scenario, not a wait for
	// anything): n2's reconciles, every 2 s, meanwhile find n1 live again.
	time.Sleep(3 * time.Second)
	gates[1].closed.Store(false)
	e.Eventually("n2 ready again", 20*time.Second, func() bool { return nodeReady(e, "n2") })
	samePods(t, e, before, "n2's agent came back a little after n1's")
}

// gatedHeartbeats passes a node's heartbeats on while open; closed, it
// fails them as a relay no API replica serves would.
type gatedHeartbeats struct {
	nodeagent.Heartbeats
	closed atomic.Bool
}

func (g *gatedHeartbeats) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (*bus.Lease, error) {
	if g.closed.Load() {
		return nil, bus.ErrUnavailable
	}
	return g.Heartbeats.Acquire(ctx, key, holder, ttl)
}

func (g *gatedHeartbeats) Renew(ctx context.Context, lease *bus.Lease, ttl time.Duration) (*bus.Lease, error) {
	if g.closed.Load() {
		return nil, bus.ErrUnavailable
	}
	return g.Heartbeats.Renew(ctx, lease, ttl)
}

func podUIDs(e *testenv.Env) map[string]bool {
	out := map[string]bool{}
	for _, p := range e.Pods("app=web") {
		out[p.Metadata.UID] = true
	}
	return out
}

// samePods fails the test unless web's pods are those of before, none
// being deleted.
func samePods(t *testing.T, e *testenv.Env, before map[string]bool, after string) {
	t.Helper()
	pods := e.Pods("app=web")
	for _, p := range pods {
		if !before[p.Metadata.UID] || p.Metadata.Deleting() {
			t.Fatalf("pod %s (uid %s) was replaced or is being deleted after %s", p.Metadata.Name, p.Metadata.UID, after)
		}
	}
	if len(pods) != len(before) {
		t.Fatalf("%d pods after %s, %d before", len(pods), after, len(before))
	}
}

// evictionHeld says whether node's EvictionHeld event is recorded.
func evictionHeld(e *testenv.Env, node string) bool {
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

func nodeReady(e *testenv.Env, name string) bool {
	var spec kinds.NodeSpec
	var st kinds.NodeStatus
	n := e.Get("nodes", name)
	_ = n.DecodeSpec(&spec)
	_ = n.DecodeStatus(&st)
	c := object.FindCondition(st.Conditions, "Ready")
	return c != nil && c.Status == "True" && len(spec.Taints) == 0
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
				Spec: &kinds.PodSpec{Containers: two}, Status: tc.status}
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
