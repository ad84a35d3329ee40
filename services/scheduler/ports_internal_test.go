package scheduler

import (
	"testing"

	"github.com/homeostat/homeostat/kinds"
)

func portedPod(name, node, phase string, ports ...kinds.ContainerPort) *kinds.Pod {
	p := ownedPod(name, "", node, phase)
	p.Spec.Containers = []kinds.Container{{Name: "c", Ports: ports}}
	return p
}

// A node takes a pod only when no other pod of it declares one of the
// pod's ports by number, protocol included; ports the node picks take
// none, and a pod that finished or left gives its ports back.
func TestHostPortsFilter(t *testing.T) {
	tcp8080 := kinds.ContainerPort{ContainerPort: 8080}
	cases := []struct {
		name   string
		placed []*kinds.Pod // on n1
		pod    *kinds.Pod
		free   bool
	}{
		{"empty node", nil, portedPod("new", "", "", tcp8080), true},
		{"held", []*kinds.Pod{portedPod("a", "n1", "", tcp8080)}, portedPod("new", "", "", tcp8080), false},
		{"held, TCP by default", []*kinds.Pod{portedPod("a", "n1", "", kinds.ContainerPort{ContainerPort: 8080, Protocol: "TCP"})},
			portedPod("new", "", "", tcp8080), false},
		{"held by an init container", []*kinds.Pod{func() *kinds.Pod {
			p := ownedPod("a", "", "n1", "")
			p.Spec.InitContainers = []kinds.Container{{Name: "i", Ports: []kinds.ContainerPort{tcp8080}}}
			return p
		}()}, portedPod("new", "", "", tcp8080), false},
		{"other protocol", []*kinds.Pod{portedPod("a", "n1", "", kinds.ContainerPort{ContainerPort: 8080, Protocol: "UDP"})},
			portedPod("new", "", "", tcp8080), true},
		{"other number", []*kinds.Pod{portedPod("a", "n1", "", kinds.ContainerPort{ContainerPort: 8081})}, portedPod("new", "", "", tcp8080), true},
		{"picked by the node", []*kinds.Pod{portedPod("a", "n1", "", kinds.ContainerPort{Name: "http"})},
			portedPod("new", "", "", kinds.ContainerPort{Name: "http"}), true},
		{"the holder finished", []*kinds.Pod{portedPod("a", "n1", kinds.PodSucceeded, tcp8080)}, portedPod("new", "", "", tcp8080), true},
		{"the pod itself, counted here", []*kinds.Pod{portedPod("new", "n1", "", tcp8080)}, portedPod("new", "", "", tcp8080), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache()
			for _, p := range tc.placed {
				c.setPod(p.Metadata.Name, p)
			}
			n := c.nodes["n1"]
			if n == nil {
				n = newNodeInfo("n1")
			}
			cand := &candidate{key: tc.pod.Metadata.Name, pod: tc.pod, ports: hostPorts(tc.pod.Spec)}
			if got := portsFree(cand, n); got != tc.free {
				t.Fatalf("portsFree = %v, want %v (node's ports %v)", got, tc.free, n.ports)
			}
		})
	}
	// Gone: the count goes with the pod.
	c := newCache()
	c.setPod("b", portedPod("b", "n1", ""))
	c.setPod("a", portedPod("a", "n1", "", tcp8080))
	c.setPod("a", nil)
	if n := c.nodes["n1"]; len(n.ports) != 0 {
		t.Fatalf("a deleted pod's ports are still counted: %v", n.ports)
	}
}
