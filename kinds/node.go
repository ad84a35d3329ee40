package kinds

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/homeostat/homeostat/object"
)

// NodeSpec is what users and the lifecycle controller set on a node.
type NodeSpec struct {
	Unschedulable bool    `json:"unschedulable,omitempty"`
	PodCIDR       string  `json:"podCIDR,omitempty"`
	Taints        []Taint `json:"taints,omitempty"`
}

// Taint repels pods that do not tolerate it.
type Taint struct {
	Key       string `json:"key"`
	Value     string `json:"value,omitempty"`
	Effect    string `json:"effect"`
	TimeAdded string `json:"timeAdded,omitempty"`
}

// Taint effects.
const (
	NoSchedule       = "NoSchedule"
	PreferNoSchedule = "PreferNoSchedule"
	NoExecute        = "NoExecute"
)

// Taints the node lifecycle controller sets.
const (
	TaintNotReady    = "node.kubernetes.io/not-ready"
	TaintUnreachable = "node.kubernetes.io/unreachable"
)

// AnnotationPodIndex on a Node says how its agent learns which pods are
// bound to it. PodIndexDerived: from a watch of every pod, as a host of
// many simulated nodes does, so the scheduler writes no entries to the
// node pod index for it; absent, from the index.
const (
	AnnotationPodIndex = "homeostat.io/pod-index"
	PodIndexDerived    = "derived"
)

// DerivesPods reports a Node whose agent derives its pods itself (see
// AnnotationPodIndex).
func DerivesPods(node *object.Object) bool {
	return node != nil && node.Metadata.Annotations[AnnotationPodIndex] == PodIndexDerived
}

// NodeStatus is what the agent reports.
type NodeStatus struct {
	Capacity        ResourceList       `json:"capacity,omitempty"`
	Allocatable     ResourceList       `json:"allocatable,omitempty"`
	Conditions      []object.Condition `json:"conditions,omitempty"`
	Addresses       []NodeAddress      `json:"addresses,omitempty"`
	DaemonEndpoints *DaemonEndpoints   `json:"daemonEndpoints,omitempty"`
	NodeInfo        map[string]string  `json:"nodeInfo,omitempty"`
}

// NodeAddress is one address of a node.
type NodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// DaemonEndpoints says where the agent serves logs.
type DaemonEndpoints struct {
	AgentURL string `json:"agentURL,omitempty"`
}

// Tolerates reports whether the toleration covers the taint.
func (t Toleration) Tolerates(taint Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key == "" {
		return t.Operator == "Exists"
	}
	if t.Key != taint.Key {
		return false
	}
	if t.Operator == "Exists" {
		return true
	}
	return t.Value == taint.Value
}

// ResourceList maps resource names (cpu, memory, pods) to quantities as
// written (250m, 1.5, 128Mi, 10).
type ResourceList map[string]Quantity

// Quantity is a CPU or memory amount, kept as written.
type Quantity string

// UnmarshalJSON accepts numbers as well as strings.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		s, err := strconv.Unquote(string(b))
		*q = Quantity(s)
		return err
	}
	*q = Quantity(b)
	return nil
}

var suffixes = map[string]float64{
	"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
}

// Value parses the quantity as a number of units (cores, bytes, pods).
func (q Quantity) Value() (float64, error) {
	s := strings.TrimSpace(string(q))
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	mult, ok := suffixes[s[i:]]
	if !ok {
		return 0, fmt.Errorf("quantity %q has an unknown suffix", q)
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("quantity %q: %w", q, err)
	}
	return n * mult, nil
}

// MilliValue is the quantity in thousandths (millicores for CPU).
func (q Quantity) MilliValue() int64 {
	v, err := q.Value()
	if err != nil {
		return 0
	}
	return int64(math.Round(v * 1000))
}

// IntValue is the quantity rounded up to whole units (bytes, pods).
func (q Quantity) IntValue() int64 {
	v, err := q.Value()
	if err != nil {
		return 0
	}
	return int64(math.Ceil(v))
}
