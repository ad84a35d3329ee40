// Package explain answers "why is this object not converged?" from a
// snapshot of the object, what it owns, the nodes its pods are on, and the
// state of the loops that act on them. It is pure: the API gathers the
// snapshot (Input) and serves the answer (Explanation) as the explain
// subresource; the CLI prints it (Text) and the console draws it.
//
// The answer walks the ownership tree (a Deployment's ReplicaSets, their
// pods, the pods' nodes), judges each object's health as Kubernetes'
// conventions read it (counts, conditions, container states, taints),
// groups identical siblings ("7 pods Pending: …"), ranks the deepest
// unhealthy causes first and closes with the most likely root cause and
// what would fix it.
package explain

import (
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// Explanation is the answer for one object.
type Explanation struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Object     Ref    `json:"object"`
	// Health is the object's own: Healthy, Progressing or Unhealthy
	// (Unknown when nothing says).
	Health string `json:"health"`
	// Summary is one line; for a healthy object, the whole answer.
	Summary string `json:"summary"`
	// Progress is desired against observed ("desired 10", "ready 5").
	Progress []Count `json:"progress,omitempty"`
	// Tree is the ownership tree below the object, unhealthy branches
	// first, identical siblings grouped.
	Tree *Node `json:"tree"`
	// Causes are what keeps the object from converging, deepest first,
	// identical ones grouped.
	Causes []Cause `json:"causes,omitempty"`
	// Loops are the loops that act on the objects on the way to the
	// causes, and where each stands with them.
	Loops []Loop `json:"loops,omitempty"`
	// History is the object's latest reconciles, oldest first.
	History []reconcile.HistoryEntry `json:"history,omitempty"`
	// RootCause is the most likely cause and what would fix it.
	RootCause *RootCause `json:"rootCause,omitempty"`
	// Hidden names what the reader may not read and so was left out.
	Hidden []string `json:"hidden,omitempty"`
}

// Healths of objects.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Unhealthy   = "Unhealthy"
	Unknown     = "Unknown"
)

// Ref names an object.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// RefOf names o.
func RefOf(o *object.Object) Ref {
	return Ref{Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name, UID: o.Metadata.UID}
}

// Count is one figure of an object's progress.
type Count struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// Node is one object of the ownership tree, or a group of identical
// siblings (Count > 1, Names the first few).
type Node struct {
	Ref
	Health string `json:"health"`
	// Status is short: "Running", "Pending", "3/10 ready".
	Status  string   `json:"status"`
	Reason  string   `json:"reason,omitempty"`
	Message string   `json:"message,omitempty"`
	Count   int      `json:"count,omitempty"`
	Names   []string `json:"names,omitempty"`
	// OnRootCause marks the way from the object to its root cause.
	OnRootCause bool    `json:"onRootCause,omitempty"`
	Children    []*Node `json:"children,omitempty"`
}

// Cause is one reason the object is not converged, with how many objects
// share it.
type Cause struct {
	Kind    string   `json:"kind"`
	Count   int      `json:"count"`
	Names   []string `json:"names"`
	Reason  string   `json:"reason"`
	Message string   `json:"message"`
	// Depth is how far below the object the cause lies (its pods: 2).
	Depth int `json:"depth"`
	// Detail holds more lines: exit codes, the last lines of a crashed
	// run, a node's conditions and taints.
	Detail []string `json:"detail,omitempty"`
	// Fix says what would fix it.
	Fix string `json:"fix,omitempty"`
}

// RootCause is the most likely cause and its fix.
type RootCause struct {
	Object  Ref    `json:"object"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// Input is what the API read for an answer.
type Input struct {
	Now  time.Time
	Root *object.Object
	// Objects are what the root owns, at any depth, found through owner
	// references (ReplicaSets, pods, …).
	Objects []*object.Object
	// Nodes are the nodes the pods are on, by name.
	Nodes map[string]*object.Object
	// Events are the events about the root and the objects below it, by
	// the uid of the object they are about.
	Events map[string][]kinds.Event
	// Loops are where each loop stands with each object, by the object's
	// uid (see StateOf).
	Loops map[string][]Loop
	// History is the root's latest reconciles, oldest first.
	History []reconcile.HistoryEntry
	// PreviousLogs are the last lines of the previous run of crashed
	// containers, by LogKey.
	PreviousLogs map[string][]string
	// Hidden names what the reader may not read.
	Hidden []string
}

// LogKey names a container's log in Input.PreviousLogs.
func LogKey(pod, container string) string { return pod + "/" + container }

// Explain answers for in.Root.
func Explain(in Input) *Explanation { return NewExplainer(&in).Explain() }

// An Explainer answers for an Input, again after more of it is read (the
// events and logs that a first answer says are worth reading), decoding
// no pod twice.
type Explainer struct {
	in   *Input
	pods map[string]*kinds.Pod
}

// NewExplainer answers for *in, as it stands at each Explain.
func NewExplainer(in *Input) *Explainer {
	return &Explainer{in: in, pods: map[string]*kinds.Pod{}}
}

// pod decodes a pod once.
func (x *Explainer) pod(o *object.Object) (*kinds.Pod, error) {
	if p, ok := x.pods[o.Metadata.UID]; ok && p.Metadata.ResourceVersion == o.Metadata.ResourceVersion {
		return p, nil
	}
	p, err := decodePod(o)
	if err == nil {
		x.pods[o.Metadata.UID] = p
	}
	return p, err
}

// decodePod decodes what a pod is judged by: its node, its containers'
// names and requests, and its status; a deployment's thousand pods are
// read in a fraction of a whole decode.
func decodePod(o *object.Object) (*kinds.Pod, error) {
	var spec struct {
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Name      string                     `json:"name"`
			Resources kinds.ResourceRequirements `json:"resources"`
		} `json:"containers"`
	}
	p := &kinds.Pod{Object: o, Spec: &kinds.PodSpec{}}
	if err := o.DecodeSpec(&spec); err != nil {
		return nil, err
	}
	if err := o.DecodeStatus(&p.Status); err != nil {
		return nil, err
	}
	p.Spec.NodeName = spec.NodeName
	for _, c := range spec.Containers {
		p.Spec.Containers = append(p.Spec.Containers, kinds.Container{Name: c.Name, Resources: c.Resources})
	}
	return p, nil
}

// Explain answers.
func (x *Explainer) Explain() *Explanation {
	in := *x.in
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	w := newWalk(in, x.pod)
	root := w.assess(in.Root)
	e := &Explanation{APIVersion: "homeostat.io/v1", Kind: "Explanation", Object: RefOf(in.Root),
		Health: root.health, Progress: root.progress, History: in.History, Hidden: in.Hidden}
	e.Tree = w.tree(in.Root, 0)
	e.Health = e.Tree.Health
	e.Causes = w.causes(e.Tree)
	if len(e.Causes) > 0 && e.Health == Unhealthy {
		c := e.Causes[0]
		e.RootCause = &RootCause{Object: Ref{Kind: c.Kind, Namespace: in.Root.Metadata.Namespace, Name: c.Names[0]},
			Reason: c.Reason, Message: c.Message, Fix: c.Fix}
		markRootCause(e.Tree, c)
	}
	e.Loops = w.loops(e)
	e.Summary = summary(e, root)
	return e
}
