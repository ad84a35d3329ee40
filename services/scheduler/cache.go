package scheduler

import (
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// nodeInfo is what the scheduler knows of a node: its object and the pods
// bound (or assumed bound) to it, with their summed requests.
type nodeInfo struct {
	obj       *object.Object
	spec      kinds.NodeSpec
	ready     bool
	allocCPU  int64 // millicores
	allocMem  int64 // bytes
	allocPods int64
	reqCPU    int64
	reqMem    int64
	pods      map[string]*kinds.Pod
	// owned counts the pods above by the uid of their controller, so that
	// spreading a pod's siblings reads one count, not every pod.
	owned map[string]int
	// ports counts the node ports its pods declare by number
	// ("TCP/8080"): a pod's processes share the node's network.
	ports       map[string]int
	labels      map[string]string
	name        string
	schedulable bool
}

// cache keeps nodeInfos up to date from pod and node events, plus the pods
// this scheduler has bound but not yet seen bound (assumed), so that its
// next decision already counts them.
type cache struct {
	mu      sync.RWMutex
	nodes   map[string]*nodeInfo
	podNode map[string]string // pod key -> node it is counted on
	assumed map[string]string // pod key -> node
	order   []*nodeInfo       // registered nodes by name, rebuilt when nodes change
	dirty   bool
	// anti holds the counted pods that have required anti-affinity terms,
	// by key, for the symmetric check: a new pod must not land where one of
	// them forbids it.
	anti map[string]*kinds.Pod
}

func newNodeInfo(name string) *nodeInfo {
	return &nodeInfo{pods: map[string]*kinds.Pod{}, owned: map[string]int{}, ports: map[string]int{}, name: name}
}

func newCache() *cache {
	return &cache{nodes: map[string]*nodeInfo{}, podNode: map[string]string{}, assumed: map[string]string{}, anti: map[string]*kinds.Pod{}}
}

// podRequests sums what a pod asks for: its containers, or its largest
// init container if that is more.
func podRequests(spec *kinds.PodSpec) (cpu, mem int64) {
	for _, c := range spec.Containers {
		cpu += c.Resources.Requests["cpu"].MilliValue()
		mem += c.Resources.Requests["memory"].IntValue()
	}
	for _, c := range spec.InitContainers {
		cpu = max(cpu, c.Resources.Requests["cpu"].MilliValue())
		mem = max(mem, c.Resources.Requests["memory"].IntValue())
	}
	return cpu, mem
}

// hostPorts are the node ports a pod takes wherever it runs: those its
// containers declare by number, as "TCP/8080". A port declared without a
// number is given a free one by the node, so it takes none here.
func hostPorts(spec *kinds.PodSpec) []string {
	var out []string
	for _, cs := range [][]kinds.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.ContainerPort == 0 {
					continue
				}
				out = append(out, kinds.Protocol(p.Protocol)+"/"+strconv.Itoa(int(p.ContainerPort)))
			}
		}
	}
	return out
}

func (c *cache) setNode(o *object.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirty = true
	n := c.nodes[o.Metadata.Name]
	if n == nil {
		n = newNodeInfo(o.Metadata.Name)
		c.nodes[o.Metadata.Name] = n
	}
	n.obj = o
	n.spec = kinds.NodeSpec{}
	_ = o.DecodeSpec(&n.spec)
	var st kinds.NodeStatus
	_ = o.DecodeStatus(&st)
	n.allocCPU = st.Allocatable["cpu"].MilliValue()
	n.allocMem = st.Allocatable["memory"].IntValue()
	n.allocPods = st.Allocatable["pods"].IntValue()
	if n.allocPods == 0 {
		n.allocPods = 110
	}
	rc := object.FindCondition(st.Conditions, "Ready")
	n.ready = rc != nil && rc.Status == object.ConditionTrue
	n.labels = map[string]string{"kubernetes.io/hostname": o.Metadata.Name}
	for k, v := range o.Metadata.Labels {
		n.labels[k] = v
	}
	n.schedulable = !n.spec.Unschedulable
}

func (c *cache) removeNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirty = true
	if n := c.nodes[name]; n != nil {
		n.obj = nil
		if len(n.pods) == 0 {
			delete(c.nodes, name)
		}
	}
}

// setPod counts a pod on its node (or uncounts it when it is finished,
// unbound or gone).
func (c *cache) setPod(key string, p *kinds.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.replace(key, p) {
		c.recount(key, p)
	}
}

// recount uncounts the pod under key and counts p, as the cache holds it
// now.
func (c *cache) recount(key string, p *kinds.Pod) {
	c.uncount(key)
	if p == nil || p.Terminal() {
		delete(c.assumed, key)
		return
	}
	node := p.Spec.NodeName
	if node == "" {
		if a, ok := c.assumed[key]; ok {
			node = a
		} else {
			return
		}
	} else {
		delete(c.assumed, key)
	}
	c.count(key, node, p)
}

// replace puts p in the place of the pod counted under key when it
// counts the same on the same node (countsAlike): a status written, or
// the bind of a pod assumed there. Most of a pod's changes are such, and
// uncounting and counting again touched six maps for nothing.
func (c *cache) replace(key string, p *kinds.Pod) bool {
	if p == nil || p.Terminal() {
		return false
	}
	node, ok := c.podNode[key]
	if !ok {
		return false
	}
	if want := p.Spec.NodeName; want != node {
		if a, ok := c.assumed[key]; want != "" || !ok || a != node {
			return false
		}
	}
	// A node gone from the store keeps its entry while pods count on it;
	// the last of them to leave takes it away (uncount), so it is theirs.
	n := c.nodes[node]
	if n == nil || n.obj == nil || n.pods[key] == nil || !countsAlike(n.pods[key], p) {
		return false
	}
	n.pods[key] = p
	if _, ok := c.anti[key]; ok {
		c.anti[key] = p
	}
	if p.Spec.NodeName != "" {
		delete(c.assumed, key)
	}
	return true
}

// countsAlike reports whether two versions of a pod count the same on a
// node: the same controller, requests and ports, and anti-affinity or
// none. The same spec does (specs are shared when equal).
func countsAlike(a, b *kinds.Pod) bool {
	ra, oka := a.Metadata.ControllerOf()
	rb, okb := b.Metadata.ControllerOf()
	if oka != okb || ra.UID != rb.UID {
		return false
	}
	if a.Spec == b.Spec {
		return true
	}
	cpuA, memA := podRequests(a.Spec)
	cpuB, memB := podRequests(b.Spec)
	return cpuA == cpuB && memA == memB && hasAntiAffinity(a.Spec) == hasAntiAffinity(b.Spec) &&
		slices.Equal(hostPorts(a.Spec), hostPorts(b.Spec))
}

// hasAntiAffinity reports required anti-affinity terms, which the cache
// keeps the pod for (cache.anti).
func hasAntiAffinity(spec *kinds.PodSpec) bool {
	a := spec.Affinity
	return a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.Required) > 0
}

func (c *cache) count(key, node string, p *kinds.Pod) {
	n := c.nodes[node]
	if n == nil {
		n = newNodeInfo(node)
		c.nodes[node] = n
	}
	cpu, mem := podRequests(p.Spec)
	n.reqCPU += cpu
	n.reqMem += mem
	n.pods[key] = p
	if ref, ok := p.Metadata.ControllerOf(); ok {
		n.owned[ref.UID]++
	}
	for _, hp := range hostPorts(p.Spec) {
		n.ports[hp]++
	}
	c.podNode[key] = node
	if hasAntiAffinity(p.Spec) {
		c.anti[key] = p
	}
}

func (c *cache) uncount(key string) {
	delete(c.anti, key)
	node, ok := c.podNode[key]
	if !ok {
		return
	}
	delete(c.podNode, key)
	n := c.nodes[node]
	if n == nil {
		return
	}
	if p := n.pods[key]; p != nil {
		cpu, mem := podRequests(p.Spec)
		n.reqCPU -= cpu
		n.reqMem -= mem
		delete(n.pods, key)
		if ref, ok := p.Metadata.ControllerOf(); ok {
			if n.owned[ref.UID]--; n.owned[ref.UID] <= 0 {
				delete(n.owned, ref.UID)
			}
		}
		for _, hp := range hostPorts(p.Spec) {
			if n.ports[hp]--; n.ports[hp] <= 0 {
				delete(n.ports, hp)
			}
		}
	}
	if n.obj == nil && len(n.pods) == 0 {
		delete(c.nodes, node)
		c.dirty = true
	}
}

// assumeLocked counts a pod on node before the bind is seen; the caller
// holds the lock, so no other decision slips in between.
func (c *cache) assumeLocked(key, node string, p *kinds.Pod) {
	c.uncount(key)
	c.assumed[key] = node
	c.count(key, node, p)
}

// forget drops an assumption after a failed bind.
func (c *cache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.assumed[key]; ok {
		delete(c.assumed, key)
		c.uncount(key)
	}
}

func (c *cache) isAssumed(key string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.assumed[key]
	return ok
}

// snapshot returns the registered nodes in a stable order; the caller
// holds the write lock (the order is rebuilt only when nodes changed) and
// uses them while it holds it.
func (c *cache) snapshot() []*nodeInfo {
	if !c.dirty && c.order != nil {
		return c.order
	}
	out := make([]*nodeInfo, 0, len(c.nodes))
	for _, n := range c.nodes {
		if n.obj != nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	c.order, c.dirty = out, false
	return out
}
