package scheduler

import "github.com/homeostat/homeostat/kinds"

// Requests of zero are scored as if they were these, as Kubernetes does,
// so that pods without requests still spread.
const (
	defaultCPU = 100
	defaultMem = 200 << 20
)

// score ranks a feasible node (higher is better): least allocated, balanced
// cpu and memory, spread of the pod's siblings, preferred node affinity
// soft topology spread, less preferred anti-affinity broken.
func score(c *candidate, n *nodeInfo, all []*nodeInfo) int64 {
	cpu, mem := c.cpu, c.mem
	if cpu == 0 {
		cpu = defaultCPU
	}
	if mem == 0 {
		mem = defaultMem
	}
	var s int64
	cpuFrac, memFrac := 1.0, 1.0
	if n.allocCPU > 0 {
		cpuFrac = float64(n.reqCPU+cpu) / float64(n.allocCPU)
	}
	if n.allocMem > 0 {
		memFrac = float64(n.reqMem+mem) / float64(n.allocMem)
	}
	least := ((1 - min(cpuFrac, 1)) + (1 - min(memFrac, 1))) / 2
	s += int64(least * 100)
	diff := cpuFrac - memFrac
	if diff < 0 {
		diff = -diff
	}
	s += int64((1 - min(diff, 1)) * 100)
	// Spread: fewer siblings (same controller) on the node is better.
	if c.owner != "" {
		s += int64(100 / (1 + n.owned[c.owner]))
	}
	s += int64(100 / (1 + len(n.pods)/8))
	if na := c.pod.Spec.Affinity; na != nil && na.NodeAffinity != nil {
		for _, p := range na.NodeAffinity.Preferred {
			if kinds.TermMatches(n.labels, p.Preference) {
				s += int64(p.Weight)
			}
		}
	}
	s -= preferredAntiAffinity(c, n, all)
	for _, sc := range c.spread {
		if sc.c.WhenUnsatisfiable == "ScheduleAnyway" {
			if dom, ok := n.labels[sc.c.TopologyKey]; ok {
				s += int64(100 / (1 + sc.counts[dom]))
			}
		}
	}
	return s
}
