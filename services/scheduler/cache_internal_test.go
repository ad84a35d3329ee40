package scheduler

import (
	"maps"
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
