package scheduler

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func ownedPod(name, owner, node, phase string) *kinds.Pod {
	o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: name, Namespace: "default"}}
	if owner != "" {
		yes := true
		o.Metadata.OwnerReferences = []object.OwnerReference{
			{APIVersion: "v1", Kind: "Other", Name: "x", UID: "not-the-controller"},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: owner, Controller: &yes},
		}
	}
	return &kinds.Pod{Object: o, Spec: &kinds.PodSpec{NodeName: node}, Status: kinds.PodStatus{Phase: phase}}
}

// TestOwnedCountsFollowThePods: a node's count of pods by controller is
// what counting its pods gives, whatever moved them: binds, assumptions
// and their failure, moves, pods finishing or going, an unowned pod.
func TestOwnedCountsFollowThePods(t *testing.T) {
	type step struct {
		op   string // set, assume, forget
		key  string
		pod  *kinds.Pod
		node string // for assume
	}
	cases := []struct {
		name  string
		steps []step
		want  map[string]map[string]int // node -> owner -> count
	}{
		{"two siblings and a stranger", []step{
			{op: "set", key: "a", pod: ownedPod("a", "rs1", "n1", "")},
			{op: "set", key: "b", pod: ownedPod("b", "rs1", "n1", "")},
			{op: "set", key: "c", pod: ownedPod("c", "rs2", "n1", "")},
			{op: "set", key: "d", pod: ownedPod("d", "", "n1", "")},
		}, map[string]map[string]int{"n1": {"rs1": 2, "rs2": 1}}},
		{"an assumed pod counts until it is forgotten", []step{
			{op: "assume", key: "a", pod: ownedPod("a", "rs1", "", ""), node: "n1"},
			{op: "assume", key: "b", pod: ownedPod("b", "rs1", "", ""), node: "n1"},
			{op: "forget", key: "b"},
		}, map[string]map[string]int{"n1": {"rs1": 1}}},
		{"an assumption confirmed by its bind counts once", []step{
			{op: "assume", key: "a", pod: ownedPod("a", "rs1", "", ""), node: "n1"},
			{op: "set", key: "a", pod: ownedPod("a", "rs1", "n1", "")},
			{op: "set", key: "a", pod: ownedPod("a", "rs1", "n1", kinds.PodRunning)},
		}, map[string]map[string]int{"n1": {"rs1": 1}}},
		{"a finished pod and a gone one count no more", []step{
			{op: "set", key: "a", pod: ownedPod("a", "rs1", "n1", "")},
			{op: "set", key: "b", pod: ownedPod("b", "rs1", "n1", "")},
			{op: "set", key: "a", pod: ownedPod("a", "rs1", "n1", kinds.PodSucceeded)},
			{op: "set", key: "b", pod: nil},
		}, map[string]map[string]int{}},
		{"a pod seen on another node moves its count", []step{
			{op: "set", key: "a", pod: ownedPod("a", "rs1", "n1", "")},
			{op: "set", key: "b", pod: ownedPod("b", "rs1", "n1", "")},
			{op: "set", key: "a", pod: ownedPod("a", "rs1", "n2", "")},
		}, map[string]map[string]int{"n1": {"rs1": 1}, "n2": {"rs1": 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache()
			for _, n := range []string{"n1", "n2"} {
				c.setNode(&object.Object{APIVersion: "v1", Kind: "Node", Metadata: object.Meta{Name: n}})
			}
			for _, s := range tc.steps {
				switch s.op {
				case "set":
					c.setPod(s.key, s.pod)
				case "assume":
					c.assumeLocked(s.key, s.node, s.pod)
				case "forget":
					c.forget(s.key)
				}
			}
			for name, n := range c.nodes {
				recount := map[string]int{}
				for _, p := range n.pods {
					if ref, ok := p.Metadata.ControllerOf(); ok {
						recount[ref.UID]++
					}
				}
				if !maps.Equal(n.owned, recount) {
					t.Errorf("node %s counts %v, its pods %v", name, n.owned, recount)
				}
				if want := tc.want[name]; !maps.Equal(n.owned, want) && (len(want) > 0 || len(n.owned) > 0) {
					t.Errorf("node %s counts %v, want %v", name, n.owned, want)
				}
			}
		})
	}
}

// podWith is a pod of owner bound to node asking for cpu, with a container
// port when port is not 0 and required anti-affinity when anti is set.
func podWith(owner, node, cpu string, port int32, anti bool) *kinds.Pod {
	p := ownedPod("p", owner, node, "")
	c := kinds.Container{Name: "c", Resources: kinds.ResourceRequirements{Requests: kinds.ResourceList{"cpu": kinds.Quantity(cpu)}}}
	if port != 0 {
		c.Ports = []kinds.ContainerPort{{ContainerPort: port}}
	}
	p.Spec.Containers = []kinds.Container{c}
	if anti {
		p.Spec.Affinity = &kinds.Affinity{PodAntiAffinity: &kinds.PodAntiAffinity{Required: []kinds.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}}}
	}
	return p
}

// Two versions of a pod count alike when a node's sums, counts and
// anti-affinity set would not move between them.
func TestCountsAlike(t *testing.T) {
	base := podWith("rs1", "n1", "100m", 0, false)
	sameSpec := ownedPod("p", "rs1", "n1", kinds.PodRunning)
	sameSpec.Spec = base.Spec
	for _, tc := range []struct {
		name string
		b    *kinds.Pod
		want bool
	}{
		{"the same spec, another status", sameSpec, true},
		{"an equal spec, bound", podWith("rs1", "n2", "100m", 0, false), true},
		{"another controller", podWith("rs2", "n1", "100m", 0, false), false},
		{"no controller", podWith("", "n1", "100m", 0, false), false},
		{"other requests", podWith("rs1", "n1", "200m", 0, false), false},
		{"a port", podWith("rs1", "n1", "100m", 8080, false), false},
		{"anti-affinity", podWith("rs1", "n1", "100m", 0, true), false},
	} {
		if got := countsAlike(base, tc.b); got != tc.want {
			t.Errorf("%s: countsAlike = %v, want %v", tc.name, got, tc.want)
		}
		if got := countsAlike(tc.b, base); got != tc.want {
			t.Errorf("%s, the other way: countsAlike = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !countsAlike(podWith("rs1", "n1", "100m", 8080, true), podWith("rs1", "n1", "100m", 8080, true)) {
		t.Error("equal ports and anti-affinity count alike")
	}
}

// A node's sums follow its pods' latest versions however they changed:
// a pod assumed, bound, Running, then asking for more; the cache holds
// the latest of each, and the anti-affinity set its latest too.
func TestNodeSumsFollowTheLatest(t *testing.T) {
	c := newCache()
	c.setNode(&object.Object{APIVersion: "v1", Kind: "Node", Metadata: object.Meta{Name: "n1"}})
	assumed := podWith("rs1", "", "100m", 8080, true)
	bound := podWith("rs1", "n1", "100m", 8080, true)
	running := ownedPod("p", "rs1", "n1", kinds.PodRunning)
	running.Spec = bound.Spec
	more := podWith("rs1", "n1", "300m", 8080, true)
	for _, s := range []struct {
		name string
		pod  *kinds.Pod
		cpu  int64
	}{{"assumed", assumed, 100}, {"bound", bound, 100}, {"running", running, 100}, {"asking for more", more, 300}} {
		if s.pod == assumed {
			c.mu.Lock()
			c.assumeLocked("a", "n1", assumed)
			c.mu.Unlock()
		} else {
			c.setPod("a", s.pod)
		}
		n := c.nodes["n1"]
		if n.reqCPU != s.cpu || n.pods["a"] != s.pod || c.anti["a"] != s.pod || n.ports["TCP/8080"] != 1 || n.owned["rs1"] != 1 {
			t.Fatalf("%s: cpu %d, pod latest %v, anti latest %v, ports %v, owned %v; want cpu %d", s.name,
				n.reqCPU, n.pods["a"] == s.pod, c.anti["a"] == s.pod, n.ports, n.owned, s.cpu)
		}
		if _, ok := c.assumed["a"]; ok != (s.pod == assumed) {
			t.Fatalf("%s: assumed %v", s.name, ok)
		}
	}
}

// TestReplaceIsARecount: whatever a run of changes, a cache that takes
// the fast path where it can holds what one that always uncounts and
// counts again holds, map for map. The pods come from a few shared specs,
// as equal specs are, so that a change keeps its spec as often as not.
func TestReplaceIsARecount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var specs []*kinds.PodSpec
	for _, node := range []string{"", "n1", "n2", "n3"} {
		for _, cpu := range []string{"100m", "200m"} {
			for _, port := range []int32{0, 8080} {
				for _, anti := range []bool{false, true} {
					specs = append(specs, podWith("x", node, cpu, port, anti).Spec)
				}
			}
		}
	}
	pod := func() *kinds.Pod {
		if rng.IntN(12) == 0 {
			return nil
		}
		owners := []string{"rs1", "rs2", ""}
		phases := []string{"", kinds.PodRunning, kinds.PodSucceeded}
		p := ownedPod("p", owners[rng.IntN(len(owners))], "", phases[rng.IntN(len(phases))])
		p.Spec = specs[rng.IntN(len(specs))]
		return p
	}
	fast, slow := newCache(), newCache()
	keys := []string{"a", "b", "c", "d"}
	for step := range 20000 {
		key, node := keys[rng.IntN(len(keys))], []string{"n1", "n2", "n3"}[rng.IntN(3)]
		var what string
		switch op := rng.IntN(10); {
		case op == 0:
			what = "node " + node + " set"
			o := &object.Object{APIVersion: "v1", Kind: "Node", Metadata: object.Meta{Name: node, Labels: map[string]string{"zone": node}}}
			fast.setNode(o)
			slow.setNode(o)
		case op == 1:
			what = "node " + node + " removed"
			fast.removeNode(node)
			slow.removeNode(node)
		case op == 2:
			p := pod()
			if p == nil {
				continue
			}
			what = "assumed " + key + " on " + node
			fast.assumeLocked(key, node, p)
			slow.assumeLocked(key, node, p)
		case op == 3:
			what = "forgot " + key
			fast.forget(key)
			slow.forget(key)
		default:
			p := pod()
			what = "set " + key
			fast.setPod(key, p)
			slow.recount(key, p)
		}
		if diff := cacheDiff(fast, slow); diff != "" {
			t.Fatalf("step %d (%s): %s", step, what, diff)
		}
	}
}

// cacheDiff says where two caches differ, "" when they do not.
func cacheDiff(a, b *cache) string {
	if !maps.Equal(a.podNode, b.podNode) || !maps.Equal(a.assumed, b.assumed) || !maps.Equal(a.anti, b.anti) || a.dirty != b.dirty {
		return fmt.Sprintf("pods on nodes %v / %v, assumed %v / %v, anti %v / %v, dirty %v / %v",
			a.podNode, b.podNode, a.assumed, b.assumed, a.anti, b.anti, a.dirty, b.dirty)
	}
	if len(a.nodes) != len(b.nodes) {
		return fmt.Sprintf("%d nodes, %d", len(a.nodes), len(b.nodes))
	}
	for name, x := range a.nodes {
		y := b.nodes[name]
		if y == nil || x.obj != y.obj || x.reqCPU != y.reqCPU || x.reqMem != y.reqMem || !maps.Equal(x.pods, y.pods) ||
			!maps.Equal(x.owned, y.owned) || !maps.Equal(x.ports, y.ports) || !maps.Equal(x.labels, y.labels) {
			return fmt.Sprintf("node %s: %+v / %+v", name, x, y)
		}
	}
	return ""
}
