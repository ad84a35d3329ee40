package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// Scheduling is a pure function of a snapshot: filters say which nodes can
// take the pod (and why the others cannot), scores rank those that can.

// candidate is a pod being placed, with what the filters need precomputed.
type candidate struct {
	key    string
	pod    *kinds.Pod
	cpu    int64
	mem    int64
	owner  string // controller owner UID, for spreading
	spread []spreadCounts
	ports  []string // hostPorts
}

// spreadCounts counts pods matching a topology spread constraint per domain.
type spreadCounts struct {
	c      kinds.TopologySpreadConstraint
	sel    object.Selector
	counts map[string]int
	min    int
}

func newCandidate(key string, p *kinds.Pod, nodes []*nodeInfo) *candidate {
	c := &candidate{key: key, pod: p}
	c.cpu, c.mem = podRequests(p.Spec)
	c.ports = hostPorts(p.Spec)
	if ref, ok := p.Metadata.ControllerOf(); ok {
		c.owner = ref.UID
	}
	for _, tsc := range p.Spec.TopologySpreadConstraints {
		sel, err := tsc.LabelSelector.Selector()
		if err != nil {
			continue
		}
		sc := spreadCounts{c: tsc, sel: sel, counts: map[string]int{}}
		for _, n := range nodes {
			if !kinds.MatchesNodeSelector(n.labels, p.Spec) {
				continue
			}
			dom, ok := n.labels[tsc.TopologyKey]
			if !ok {
				continue
			}
			sc.counts[dom] += matchingPods(n, p.Metadata.Namespace, sel)
		}
		sc.min = -1
		for _, v := range sc.counts {
			if sc.min < 0 || v < sc.min {
				sc.min = v
			}
		}
		c.spread = append(c.spread, sc)
	}
	return c
}

func matchingPods(n *nodeInfo, ns string, sel object.Selector) int {
	k := 0
	for _, p := range n.pods {
		if p.Metadata.Namespace == ns && sel.Matches(p.Metadata.Labels) {
			k++
		}
	}
	return k
}

// filter returns "" when the node can take the pod, or the reason it cannot.
func filter(c *candidate, n *nodeInfo, all []*nodeInfo, cc *cache) string {
	spec := c.pod.Spec
	if !n.ready {
		return "node(s) were not ready"
	}
	if !n.schedulable {
		return "node(s) were unschedulable"
	}
	for _, t := range n.spec.Taints {
		if t.Effect == kinds.PreferNoSchedule {
			continue
		}
		if !kinds.Tolerated(t, spec.Tolerations) {
			return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
		}
	}
	if !kinds.MatchesNodeSelector(n.labels, spec) {
		return "node(s) didn't match Pod's node affinity/selector"
	}
	if int64(len(n.pods))+1 > n.allocPods {
		return "Too many pods"
	}
	if c.cpu > 0 && n.reqCPU+c.cpu > n.allocCPU {
		return "Insufficient cpu"
	}
	if c.mem > 0 && n.reqMem+c.mem > n.allocMem {
		return "Insufficient memory"
	}
	if !portsFree(c, n) {
		return "node(s) didn't have free ports for the requested pod ports"
	}
	if !antiAffinityOK(c, n, all) {
		return "node(s) didn't match pod anti-affinity rules"
	}
	if !existingAntiAffinityOK(c, n, cc) {
		return "node(s) didn't satisfy existing pods anti-affinity rules"
	}
	for _, sc := range c.spread {
		if sc.c.WhenUnsatisfiable != "DoNotSchedule" {
			continue
		}
		dom, ok := n.labels[sc.c.TopologyKey]
		if !ok {
			return "node(s) didn't match pod topology spread constraints (missing required label)"
		}
		if sc.counts[dom]+1-max(sc.min, 0) > int(sc.c.MaxSkew) {
			return "node(s) didn't match pod topology spread constraints"
		}
	}
	return ""
}

// portsFree: no other pod of the node declares a port the pod declares.
func portsFree(c *candidate, n *nodeInfo) bool {
	_, counted := n.pods[c.key]
	for _, hp := range c.ports {
		held := n.ports[hp]
		if counted {
			held-- // the pod itself, assumed here already
		}
		if held > 0 {
			return false
		}
	}
	return true
}

// antiAffinityOK: no pod selected by a required anti-affinity term runs in
// the node's topology domain.
func antiAffinityOK(c *candidate, n *nodeInfo, all []*nodeInfo) bool {
	aa := c.pod.Spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil {
		return true
	}
	for _, term := range aa.PodAntiAffinity.Required {
		sel, err := term.LabelSelector.Selector()
		if err != nil {
			continue
		}
		dom, ok := n.labels[term.TopologyKey]
		if !ok {
			continue
		}
		nss := term.Namespaces
		if len(nss) == 0 {
			nss = []string{c.pod.Metadata.Namespace}
		}
		for _, other := range all {
			if other.labels[term.TopologyKey] != dom {
				continue
			}
			for key, p := range other.pods {
				if key != c.key && contains(nss, p.Metadata.Namespace) && sel.Matches(p.Metadata.Labels) {
					return false
				}
			}
		}
	}
	return true
}

// existingAntiAffinityOK is the symmetric check: no pod already placed has
// a required anti-affinity term that selects this pod in the node's domain.
func existingAntiAffinityOK(c *candidate, n *nodeInfo, cc *cache) bool {
	for key, p := range cc.anti {
		if key == c.key {
			continue
		}
		other := cc.nodes[cc.podNode[key]]
		if other == nil {
			continue
		}
		for _, term := range p.Spec.Affinity.PodAntiAffinity.Required {
			dom, ok := n.labels[term.TopologyKey]
			if !ok || other.labels[term.TopologyKey] != dom {
				continue
			}
			nss := term.Namespaces
			if len(nss) == 0 {
				nss = []string{p.Metadata.Namespace}
			}
			sel, err := term.LabelSelector.Selector()
			if err == nil && contains(nss, c.pod.Metadata.Namespace) && sel.Matches(c.pod.Metadata.Labels) {
				return false
			}
		}
	}
	return true
}

// preferredAntiAffinity sums the weights of preferred anti-affinity terms
// that pods in the node's domain break.
func preferredAntiAffinity(c *candidate, n *nodeInfo, all []*nodeInfo) int64 {
	aa := c.pod.Spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil {
		return 0
	}
	var penalty int64
	for _, w := range aa.PodAntiAffinity.Preferred {
		term := w.PodAffinityTerm
		sel, err := term.LabelSelector.Selector()
		dom, ok := n.labels[term.TopologyKey]
		if err != nil || !ok {
			continue
		}
		nss := term.Namespaces
		if len(nss) == 0 {
			nss = []string{c.pod.Metadata.Namespace}
		}
		for _, other := range all {
			if other.labels[term.TopologyKey] != dom {
				continue
			}
			if matchingIn(other, nss, sel, c.key) > 0 {
				penalty += int64(w.Weight)
				break
			}
		}
	}
	return penalty
}

func matchingIn(n *nodeInfo, nss []string, sel object.Selector, self string) int {
	k := 0
	for key, p := range n.pods {
		if key != self && contains(nss, p.Metadata.Namespace) && sel.Matches(p.Metadata.Labels) {
			k++
		}
	}
	return k
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unschedulableMessage summarises why no node fits, as a person can act
// on: "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had
// untolerated taint {dedicated: db}."
func unschedulableMessage(total int, reasons map[string]int) string {
	if total == 0 {
		return "0/0 nodes are available: no nodes are registered."
	}
	parts := make([]string, 0, len(reasons))
	for r, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Slice(parts, func(i, j int) bool {
		return reasonCount(parts[i]) > reasonCount(parts[j]) || (reasonCount(parts[i]) == reasonCount(parts[j]) && parts[i] < parts[j])
	})
	return fmt.Sprintf("0/%d nodes are available: %s.", total, strings.Join(parts, ", "))
}

func reasonCount(s string) int {
	var n int
	_, _ = fmt.Sscanf(s, "%d", &n)
	return n
}
