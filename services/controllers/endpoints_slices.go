package controllers

import (
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// maxSliceEndpoints is how many endpoints one EndpointSlice holds, as
// Kubernetes' controller has it by default.
const maxSliceEndpoints = 100

// sliceWant is an EndpointSlice the endpoints controller wants.
type sliceWant struct {
	name  string
	slice kinds.EndpointSlice
}

// endpointsVerdict is what a Service's pods make of it: the slices, and
// how the Service stands (the reason and message of its EndpointsReady
// condition; ready is false while any port has no ready endpoint).
type endpointsVerdict struct {
	slices          []sliceWant
	ready           bool
	reason, message string
}

// Reasons of a Service's EndpointsReady condition.
const (
	reasonEndpointsReady     = "EndpointsReady"
	reasonNoPodsSelected     = "NoPodsSelected"
	reasonTargetPortNotFound = "TargetPortNotFound"
	reasonNoReadyEndpoints   = "NoReadyEndpoints"
	reasonPortTaken          = "PortTaken"
)

// desiredSlices decides a Service's EndpointSlices from the pods its
// selector picks (pods, any order). A pod is an endpoint once it has an
// address (its node's) and until it finishes; it is ready while its Ready
// condition holds and it is not being deleted, so that it leaves rotation
// the moment either changes. Its ports are the Service's target ports as
// the pod resolves them (a name through the ports its node gave it); the
// endpoints that share port numbers share slices, of at most 100, each
// named for the Service and a hash of the numbers, so that every process
// deciding them names them alike.
func desiredSlices(svc string, spec kinds.ServiceSpec, pods []*kinds.Pod) endpointsVerdict {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Metadata.Name < pods[j].Metadata.Name })
	type group struct {
		addressType string
		ports       []kinds.EndpointPort
		endpoints   []kinds.Endpoint
	}
	groups := map[string]*group{}
	resolved := make([]int, len(spec.Ports)) // pods that resolve each port
	readyPods, candidates := 0, 0
	for _, p := range pods {
		if p.Status.PodIP == "" || p.Terminal() {
			continue
		}
		candidates++
		var ports []kinds.EndpointPort
		for i, sp := range spec.Ports {
			if n, ok := targetPort(p, sp); ok {
				resolved[i]++
				ports = append(ports, kinds.EndpointPort{Name: sp.Name, Protocol: kinds.Protocol(sp.Protocol), Port: n})
			}
		}
		if len(spec.Ports) > 0 && len(ports) == 0 {
			continue
		}
		deleting := p.Metadata.Deleting()
		ready, serving := p.Ready() && !deleting, p.Ready()
		if ready {
			readyPods++
		}
		ep := kinds.Endpoint{Addresses: []string{p.Status.PodIP}, NodeName: p.Spec.NodeName,
			Conditions: kinds.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &deleting},
			TargetRef:  &kinds.ObjectReference{Kind: "Pod", Namespace: p.Metadata.Namespace, Name: p.Metadata.Name, UID: p.Metadata.UID}}
		at := addressType(p.Status.PodIP)
		key := at + " " + portsKey(ports)
		g := groups[key]
		if g == nil {
			g = &group{addressType: at, ports: ports}
			groups[key] = g
		}
		g.endpoints = append(g.endpoints, ep)
	}
	var v endpointsVerdict
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		base := svc + "-" + shortHash(k)
		for i := 0; i < len(g.endpoints); i += maxSliceEndpoints {
			name := base
			if i > 0 {
				name += "-" + strconv.Itoa(i/maxSliceEndpoints)
			}
			eps := g.endpoints[i:min(i+maxSliceEndpoints, len(g.endpoints))]
			v.slices = append(v.slices, sliceWant{name: truncName(name, ""), slice: kinds.EndpointSlice{
				AddressType: g.addressType, Endpoints: eps, Ports: g.ports}})
		}
	}
	v.ready, v.reason, v.message = standing(spec, len(pods), candidates, readyPods, resolved)
	return v
}

// standing says how a Service stands, for its EndpointsReady condition.
func standing(spec kinds.ServiceSpec, selected, candidates, ready int, resolved []int) (bool, string, string) {
	if selected == 0 {
		return false, reasonNoPodsSelected, fmt.Sprintf("the selector %s selects no pod", selectorText(spec.Selector))
	}
	for i, n := range resolved {
		if n == 0 && candidates > 0 {
			sp := spec.Ports[i]
			return false, reasonTargetPortNotFound, fmt.Sprintf("port %s: none of the %d pods selected declares %s",
				portLabel(sp), candidates, targetText(sp))
		}
	}
	if ready == 0 {
		return false, reasonNoReadyEndpoints, fmt.Sprintf("none of the %d pods the selector %s selects is ready", selected, selectorText(spec.Selector))
	}
	return true, reasonEndpointsReady, fmt.Sprintf("%d of the %d pods selected are ready", ready, selected)
}

// targetPort is the number of a Service port at a pod: its target port's
// number, or the number of the container port it names (as the pod's node
// gave it, for one declared without a number).
func targetPort(p *kinds.Pod, sp kinds.ServicePort) (int32, bool) {
	t := sp.TargetPort
	switch {
	case t == nil:
		return sp.Port, true
	case !t.IsString:
		return t.Int, t.Int > 0
	}
	return p.PortNumber(t.Str, sp.Protocol)
}

func addressType(ip string) string {
	if a := net.ParseIP(ip); a != nil && a.To4() == nil {
		return "IPv6"
	}
	return "IPv4"
}

func portsKey(ports []kinds.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = p.Name + "/" + p.Protocol + "/" + strconv.Itoa(int(p.Port))
	}
	return strings.Join(parts, ",")
}

func shortHash(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

func selectorText(sel map[string]string) string { return object.SelectorFromSet(sel).String() }

func portLabel(sp kinds.ServicePort) string {
	if sp.Name != "" {
		return sp.Name
	}
	return strconv.Itoa(int(sp.Port))
}

func targetText(sp kinds.ServicePort) string {
	if sp.TargetPort != nil && sp.TargetPort.IsString {
		return fmt.Sprintf("a %s port named %q", kinds.Protocol(sp.Protocol), sp.TargetPort.Str)
	}
	return "it"
}
