package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/nodeagent"
	"github.com/homeostat/homeostat/testenv"
)

func pod(name, cpu, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: t}}
spec:
  %s
  containers: [{name: c, command: [x], resources: {requests: {cpu: "%s"}}}]
`, name, extra, cpu)
}

func scheduledCond(p *kinds.Pod) *object.Condition {
	return object.FindCondition(p.Status.Conditions, kinds.PodScheduled)
}

func TestUnschedulableReasonAndRetry(t *testing.T) {
	e := testenv.New(t)
	e.Scheduler("s1")
	small := kinds.ResourceList{"cpu": "1", "memory": "1Gi", "pods": "10"}
	e.Node("a", small, nil)
	e.Node("b", small, nil)
	// Node c is tainted from the start: a taint patched on later could
	// reach the scheduler after the pod, which would then fit there.
	e.Node("c", kinds.ResourceList{"cpu": "8", "memory": "8Gi", "pods": "10"}, nil, func(c *nodeagent.Config) {
		c.Taints = []kinds.Taint{{Key: "dedicated", Value: "db", Effect: "NoSchedule"}}
	})
	e.Apply(pod("big", "2", ""))
	want := "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: db}."
	e.Eventually("the reason", 10*time.Second, func() bool {
		for _, p := range e.Pods("app=t") {
			if c := scheduledCond(p); c != nil && c.Status == "False" && c.Message == want {
				return true
			}
		}
		return false
	})
	// A node that fits arrives: the pod is retried at once and bound there.
	e.Node("d", kinds.ResourceList{"cpu": "4", "memory": "4Gi", "pods": "10"}, nil)
	e.Eventually("bound to d", 10*time.Second, func() bool {
		ps := e.Pods("app=t")
		return len(ps) == 1 && ps[0].Spec.NodeName == "d" && scheduledCond(ps[0]).Status == "True"
	})
}

func TestFiltersAndSpread(t *testing.T) {
	e := testenv.New(t)
	e.Scheduler("s1")
	cap := kinds.ResourceList{"cpu": "8", "memory": "8Gi", "pods": "20"}
	e.Node("ssd-1", cap, map[string]string{"disk": "ssd", "zone": "z1"})
	e.Node("ssd-2", cap, map[string]string{"disk": "ssd", "zone": "z2"})
	e.Node("hdd-1", cap, map[string]string{"disk": "hdd", "zone": "z1"})
	// nodeSelector
	e.Apply(pod("sel", "100m", "nodeSelector: {disk: hdd}"))
	// tolerations let a pod onto a tainted node
	e.Patch("nodes", "ssd-2", `{"spec":{"taints":[{"key":"gpu","effect":"NoSchedule"}]}}`)
	e.Apply(pod("tol", "100m", "nodeSelector: {zone: z2}\n  tolerations: [{key: gpu, operator: Exists}]"))
	// required anti-affinity on hostname: three replicas cannot share a node
	for i := range 3 {
		e.Apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: anti-%d, labels: {app: anti}}
spec:
  tolerations: [{key: gpu, operator: Exists}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {labelSelector: {matchLabels: {app: anti}}, topologyKey: kubernetes.io/hostname}
  containers: [{name: c, command: [x]}]
`, i))
	}
	e.Eventually("all bound", 10*time.Second, func() bool {
		for _, p := range append(e.Pods("app=t"), e.Pods("app=anti")...) {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		return len(e.Pods("app=anti")) == 3
	})
	for _, p := range e.Pods("app=t") {
		want := map[string]string{"sel": "hdd-1", "tol": "ssd-2"}[p.Metadata.Name]
		if p.Spec.NodeName != want {
			t.Errorf("%s on %s, want %s", p.Metadata.Name, p.Spec.NodeName, want)
		}
	}
	nodes := map[string]bool{}
	for _, p := range e.Pods("app=anti") {
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != 3 {
		t.Fatalf("anti-affine pods share nodes: %v", nodes)
	}
	// A fourth anti-affine pod has nowhere to go.
	e.Apply(`apiVersion: v1
kind: Pod
metadata: {name: anti-3, labels: {app: anti}}
spec:
  tolerations: [{key: gpu, operator: Exists}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {labelSelector: {matchLabels: {app: anti}}, topologyKey: kubernetes.io/hostname}
  containers: [{name: c, command: [x]}]
`)
	e.Eventually("anti-3 unschedulable", 10*time.Second, func() bool {
		p, _ := kinds.DecodePod(e.Get("pods", "anti-3"))
		c := scheduledCond(p)
		return c != nil && c.Message == "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
	})
}

func TestTopologySpread(t *testing.T) {
	e := testenv.New(t)
	e.Scheduler("s1")
	cap := kinds.ResourceList{"cpu": "8", "memory": "8Gi", "pods": "20"}
	e.Node("z1-a", cap, map[string]string{"zone": "z1"})
	e.Node("z1-b", cap, map[string]string{"zone": "z1"})
	e.Node("z2-a", cap, map[string]string{"zone": "z2"})
	for i := range 4 {
		e.Apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: s-%d, labels: {app: spread}}
spec:
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: spread}}}
  containers: [{name: c, command: [x]}]
`, i))
		e.Eventually("bound", 10*time.Second, func() bool {
			p, _ := kinds.DecodePod(e.Get("pods", fmt.Sprintf("s-%d", i)))
			return p.Spec.NodeName != ""
		})
	}
	zones := map[string]int{}
	for _, p := range e.Pods("app=spread") {
		zones[p.Spec.NodeName[:2]]++
	}
	if zones["z1"] != 2 || zones["z2"] != 2 {
		t.Fatalf("spread over zones: %v, want 2 and 2", zones)
	}
}

// Two scheduler processes never over-commit a node: one leads and decides,
// counting its own binds before its cache shows them; the other takes over
// when the leader stops.
func TestTwoSchedulersNeverOvercommit(t *testing.T) {
	e := testenv.New(t)
	s1, stop1 := e.Scheduler("s1")
	s2, stop2 := e.Scheduler("s2")
	e.Node("only", kinds.ResourceList{"cpu": "2", "memory": "4Gi", "pods": "50"}, nil)
	for i := range 10 {
		e.Apply(pod(fmt.Sprintf("p%d", i), "500m", ""))
	}
	bound := func() int {
		n := 0
		for _, p := range e.Pods("app=t") {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
	e.Eventually("4 bound and 6 unschedulable", 15*time.Second, func() bool {
		un := 0
		for _, p := range e.Pods("app=t") {
			if c := scheduledCond(p); c != nil && c.Status == "False" {
				un++
			}
		}
		return bound() == 4 && un == 6
	})
	if s1.Leader() == s2.Leader() {
		t.Fatalf("leaders: s1 %v s2 %v; want exactly one", s1.Leader(), s2.Leader())
	}
	// The leader stops; the other takes over and places the rest on a new node.
	if s1.Leader() {
		stop1()
	} else {
		stop2()
	}
	e.Node("second", kinds.ResourceList{"cpu": "3", "memory": "4Gi", "pods": "50"}, nil)
	e.Eventually("10 bound", 20*time.Second, func() bool { return bound() == 10 })
	used := map[string]int64{}
	for _, p := range e.Pods("app=t") {
		used[p.Spec.NodeName] += 500
	}
	if used["only"] > 2000 || used["second"] > 3000 {
		t.Fatalf("over-committed: %v millicores requested", used)
	}
}

func TestAntiAffinityBothWaysAndPreferred(t *testing.T) {
	e := testenv.New(t)
	e.Scheduler("s1")
	cap := kinds.ResourceList{"cpu": "8", "memory": "8Gi", "pods": "20"}
	e.Node("x", cap, nil)
	e.Node("y", cap, nil)
	// A loner on x forbids app=noisy next to it.
	e.Apply(`apiVersion: v1
kind: Pod
metadata: {name: loner, labels: {app: loner}}
spec:
  nodeSelector: {kubernetes.io/hostname: x}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {labelSelector: {matchLabels: {app: noisy}}, topologyKey: kubernetes.io/hostname}
  containers: [{name: c, command: [x]}]
`)
	e.Eventually("loner on x", 10*time.Second, func() bool {
		p, _ := kinds.DecodePod(e.Get("pods", "loner"))
		return p.Spec.NodeName == "x"
	})
	for i := range 3 {
		e.Apply(fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: noisy-%d, labels: {app: noisy}}\nspec: {containers: [{name: c, command: [x]}]}\n", i))
	}
	e.Eventually("noisy pods bound", 10*time.Second, func() bool {
		ps := e.Pods("app=noisy")
		for _, p := range ps {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		return len(ps) == 3
	})
	for _, p := range e.Pods("app=noisy") {
		if p.Spec.NodeName != "y" {
			t.Fatalf("%s landed on %s next to the loner", p.Metadata.Name, p.Spec.NodeName)
		}
	}
	// Preferred anti-affinity outweighs spreading: x holds fewer pods, but
	// the new pod prefers to stay away from the loner there.
	for i := range 2 {
		e.Apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: pref-%d, labels: {app: pref}}
spec:
  nodeSelector: {kubernetes.io/hostname: "%s"}
  containers: [{name: c, command: [x]}]
`, i, []string{"x", "y"}[i]))
	}
	e.Apply(`apiVersion: v1
kind: Pod
metadata: {name: pref-new, labels: {app: other}}
spec:
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm: {labelSelector: {matchLabels: {app: loner}}, topologyKey: kubernetes.io/hostname}
  containers: [{name: c, command: [x]}]
`)
	e.Eventually("pref-new bound away from the loner", 10*time.Second, func() bool {
		p, _ := kinds.DecodePod(e.Get("pods", "pref-new"))
		return p.Spec.NodeName == "y"
	})
}

// A port declared by number is its pod's on its node: a second pod
// declaring it is placed on another node, or waits saying why; a port
// the node picks keeps no pod apart.
func TestHostPortsKeepPodsApart(t *testing.T) {
	e := testenv.New(t)
	e.Scheduler("s1")
	capacity := kinds.ResourceList{"cpu": "8", "memory": "8Gi", "pods": "10"}
	e.Node("a", capacity, nil)
	ported := func(name, port string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: t}}
spec:
  containers: [{name: c, command: [x], ports: [%s]}]
`, name, port)
	}
	e.Apply(ported("first", "{containerPort: 8080}"))
	e.Apply(ported("picked", "{name: http, containerPort: 0}"))
	e.Eventually("first and picked bound to a", 10*time.Second, func() bool {
		n := 0
		for _, p := range e.Pods("app=t") {
			if p.Spec.NodeName == "a" {
				n++
			}
		}
		return n == 2
	})
	e.Apply(ported("second", "{containerPort: 8080}"))
	want := "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
	e.Eventually("second waiting, saying why", 10*time.Second, func() bool {
		for _, p := range e.Pods("app=t") {
			if c := scheduledCond(p); p.Metadata.Name == "second" && c != nil && c.Status == "False" && c.Message == want {
				return true
			}
		}
		return false
	})
	e.Node("b", capacity, nil)
	e.Eventually("second bound to b", 10*time.Second, func() bool {
		for _, p := range e.Pods("app=t") {
			if p.Metadata.Name == "second" {
				return p.Spec.NodeName == "b"
			}
		}
		return false
	})
}

// A bound pod that finishes frees what it asked of its node: the
// scheduler reads the phase of a bound pod's status, and nothing more.
func TestFinishedPodFreesItsNode(t *testing.T) {
	e := testenv.New(t)
	e.Scheduler("s1")
	e.Node("a", kinds.ResourceList{"cpu": "1", "memory": "1Gi", "pods": "10"}, nil)
	e.Apply(pod("first", "1", ""))
	var first *kinds.Pod
	e.Eventually("first Running on a", 10*time.Second, func() bool {
		ps := e.Pods("app=t")
		if len(ps) == 1 && ps[0].Spec.NodeName == "a" && ps[0].Status.Phase == kinds.PodRunning {
			first = ps[0]
			return true
		}
		return false
	})
	// Finished, as its node would report it; the node's agent wrote
	// Running already and has nothing more to report.
	done := first.Object.Clone()
	st := first.Status
	st.Phase = kinds.PodSucceeded
	if err := done.SetStatus(st); err != nil {
		t.Fatal(err)
	}
	if _, err := e.C.Update(e.Ctx, e.Res("pods"), done, true); err != nil {
		t.Fatal(err)
	}
	e.Apply(pod("second", "1", ""))
	e.Eventually("second bound to a, in the cpu first freed", 10*time.Second, func() bool {
		for _, p := range e.Pods("app=t") {
			if p.Metadata.Name == "second" {
				return p.Spec.NodeName == "a"
			}
		}
		return false
	})
}
