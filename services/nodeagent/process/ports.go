package process

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/homeostat/homeostat/kinds"
)

// ErrPortTaken is why a pod cannot start on this node: a port it declares
// is held by another pod here, or no port of the range is free.
var ErrPortTaken = errors.New("port taken")

// Default range of the ports the runtime picks: below Linux's ephemeral
// range (32768–60999), so that no outgoing connection holds one, as Nomad
// does with its dynamic ports.
const (
	DefaultPortMin = 20000
	DefaultPortMax = 32767
)

// portKey is a port of the node: a protocol and a number.
type portKey struct {
	proto  string
	number int32
}

func (k portKey) String() string { return k.proto + "/" + strconv.Itoa(int(k.number)) }

// PortBook holds the node's ports given to pods, so that no two pods are
// given one port: a declared number is the pod's own, a port declared
// without one (containerPort 0) gets a free number of the range, kept for
// the pod's life across its containers' restarts and the agent's.
type PortBook struct {
	min, max int32
	// free reports whether the operating system would let a process take
	// the port now; a port another process holds is passed over.
	free func(proto string, number int32) bool

	mu   sync.Mutex
	next int32
	held map[portKey]string // -> the holder's pod uid
	pods map[string]string  // pod uid -> namespace/name, to say who holds a port
}

// NewPortBook books ports of min–max (the default range when either is
// 0); free, when not nil, tells whether the operating system would let a
// process take a port (a simulated node has no processes, and passes nil).
func NewPortBook(min, max int32, free func(proto string, number int32) bool) *PortBook {
	if min <= 0 || max < min {
		min, max = DefaultPortMin, DefaultPortMax
	}
	if free == nil {
		free = func(string, int32) bool { return true }
	}
	return &PortBook{min: min, max: max, free: free, next: min, held: map[portKey]string{}, pods: map[string]string{}}
}

// Assign gives every port of the pod's containers its number, and holds
// them for the pod: the containers come back with their ports' numbers
// set. A port the pod had before (before: container -> port name ->
// number) keeps its number when it can.
func (b *PortBook) Assign(pod *kinds.Pod, before map[string]map[string]int32) (inits, mains []kinds.Container, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	uid := pod.Metadata.UID
	var mine []portKey
	take := func(cs []kinds.Container) ([]kinds.Container, error) {
		out := make([]kinds.Container, len(cs))
		for i, c := range cs {
			out[i] = c
			if len(c.Ports) == 0 {
				continue
			}
			out[i].Ports = make([]kinds.ContainerPort, len(c.Ports))
			for j, p := range c.Ports {
				k := portKey{proto: kinds.Protocol(strings.ToUpper(p.Protocol)), number: p.ContainerPort}
				if k.number == 0 {
					k.number = b.pick(uid, k.proto, before[c.Name][p.Name])
					if k.number == 0 {
						return nil, fmt.Errorf("%w: no free %s port in %d–%d for port %q of container %s", ErrPortTaken, k.proto, b.min, b.max, p.Name, c.Name)
					}
				} else if holder, ok := b.held[k]; ok && holder != uid {
					return nil, fmt.Errorf("%w: port %s of container %s is held on this node by pod %s", ErrPortTaken, k, c.Name, b.pods[holder])
				}
				b.held[k] = uid
				mine = append(mine, k)
				out[i].Ports[j] = p
				out[i].Ports[j].ContainerPort = k.number
				out[i].Ports[j].Protocol = k.proto
			}
		}
		return out, nil
	}
	if inits, err = take(pod.Spec.InitContainers); err == nil {
		mains, err = take(pod.Spec.Containers)
	}
	if err != nil {
		for _, k := range mine {
			delete(b.held, k)
		}
		b.forget(uid)
		return nil, nil, err
	}
	// Named only to say who holds a port: most pods hold none, and a name
	// each took 12 MB for 100,000 simulated pods.
	if len(mine) > 0 {
		b.pods[uid] = pod.Metadata.Namespace + "/" + pod.Metadata.Name
	}
	return inits, mains, nil
}

// pick finds a number for a port the pod declared without one: the one
// it had before if that is still its own or nobody's, else the next free
// one of the range.
func (b *PortBook) pick(uid, proto string, before int32) int32 {
	if before >= b.min && before <= b.max {
		k := portKey{proto, before}
		if holder, ok := b.held[k]; !ok || holder == uid {
			return before
		}
	}
	span := b.max - b.min + 1
	for range span {
		n := b.next
		if b.next++; b.next > b.max {
			b.next = b.min
		}
		k := portKey{proto, n}
		if _, ok := b.held[k]; !ok && b.free(k.proto, k.number) {
			return n
		}
	}
	return 0
}

// PortsBefore are the numbers a pod's ports had, as its last known status
// shows them: what Assign keeps.
func PortsBefore(st kinds.PodStatus) map[string]map[string]int32 { return portsBefore(st, nil) }

// portsBefore are the numbers a pod's ports had: as its last known status
// shows them, or as the surviving processes were told.
func portsBefore(st kinds.PodStatus, survivors map[string]found) map[string]map[string]int32 {
	before := map[string]map[string]int32{}
	set := func(container, name string, n int32) {
		if before[container] == nil {
			before[container] = map[string]int32{}
		}
		before[container][name] = n
	}
	for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
		for _, p := range cs.Ports {
			set(cs.Name, p.Name, p.ContainerPort)
		}
	}
	for c, f := range survivors {
		for name, n := range f.ports {
			set(c, name, n)
		}
	}
	return before
}

// Release gives a pod's ports back.
func (b *PortBook) Release(uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, holder := range b.held {
		if holder == uid {
			delete(b.held, k)
		}
	}
	b.forget(uid)
}

func (b *PortBook) forget(uid string) { delete(b.pods, uid) }

// parsePorts reads the marker portEnv leaves.
func parsePorts(v string) map[string]int32 {
	if v == "" {
		return nil
	}
	out := map[string]int32{}
	for _, kv := range strings.Split(v, ",") {
		name, n, _ := strings.Cut(kv, "=")
		if num, err := strconv.ParseInt(n, 10, 32); err == nil && name != "" {
			out[name] = int32(num)
		}
	}
	return out
}

// osFree asks the operating system: a port is free when it can be bound
// on every address.
func osFree(proto string, number int32) bool {
	addr := ":" + strconv.Itoa(int(number))
	if proto == "UDP" {
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// portEnv is what a container's process is told of its ports: PORT_<NAME>
// for each named one (upper case, dashes as underscores), and PORT for
// the first; and a marker naming them all, so that a restarted agent gives
// an adopted process the ports it listens on.
func portEnv(ports []kinds.ContainerPort) []string {
	if len(ports) == 0 {
		return nil
	}
	var env, marks []string
	for _, p := range ports {
		if p.Name != "" {
			marks = append(marks, p.Name+"="+strconv.Itoa(int(p.ContainerPort)))
		}
	}
	if len(marks) > 0 {
		env = append(env, envPorts+"="+strings.Join(marks, ","))
	}
	for i, p := range ports {
		n := strconv.Itoa(int(p.ContainerPort))
		if i == 0 {
			env = append(env, "PORT="+n)
		}
		if p.Name != "" {
			env = append(env, "PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))+"="+n)
		}
	}
	return env
}
