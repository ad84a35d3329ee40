package explain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/table"
)

// namesKept is how many names a group or a cause lists.
const namesKept = 3

// tree builds the node of o and, below it, what o owns: siblings without
// children of their own that share kind, health and cause are one group.
func (w *walk) tree(o *object.Object, depth int) *Node {
	a := w.assess(o)
	n := &Node{Ref: RefOf(o), Health: a.health, Status: a.status, Reason: a.reason, Message: a.message}
	if depth > 8 {
		return n // ownership never goes this deep; a loop of owners would
	}
	if a.node != nil {
		n.Children = append(n.Children, w.nodeOf(a.node))
	}
	groups := map[string]*Node{}
	var order []string
	for _, c := range w.children[o.Metadata.UID] {
		if len(w.children[c.Metadata.UID]) > 0 {
			n.Children = append(n.Children, w.tree(c, depth+1))
			continue
		}
		ca := w.assess(c)
		key := c.Kind + "|" + ca.health + "|" + ca.group
		if ca.group == "" {
			key += "|" + ca.reason + "|" + ca.status
		}
		g, ok := groups[key]
		if !ok {
			g = &Node{Ref: Ref{Kind: c.Kind, Namespace: c.Metadata.Namespace, Name: c.Metadata.Name, UID: c.Metadata.UID},
				Health: ca.health, Status: ca.status, Reason: ca.reason, Message: ca.message}
			if c.Kind == "Pod" {
				g.Status = table.PodStatus(c) // as kubectl shows it, for the first of the group
			}
			if ca.node != nil {
				g.Children = []*Node{w.nodeOf(ca.node)}
			}
			groups[key] = g
			order = append(order, key)
		}
		g.Count++
		if len(g.Names) < namesKept {
			g.Names = append(g.Names, c.Metadata.Name)
		}
	}
	for _, k := range order {
		n.Children = append(n.Children, groups[k])
	}
	sortNodes(n.Children)
	// An object whose own state says only "not done yet" is unhealthy
	// when what it owns is.
	if (n.Health == Progressing || n.Health == Unknown) && len(n.Children) > 0 && worst(n.Children[0]) == Unhealthy {
		n.Health = Unhealthy
	}
	return n
}

// nodeOf is the tree node of the Node a pod is on.
func (w *walk) nodeOf(o *object.Object) *Node {
	a := w.assess(o)
	return &Node{Ref: RefOf(o), Health: a.health, Status: a.status, Reason: a.reason, Message: a.message}
}

var healthRank = map[string]int{Unhealthy: 0, Progressing: 1, Unknown: 2, Healthy: 3}

// sortNodes puts unhealthy branches first, then the bigger groups.
func sortNodes(ns []*Node) {
	sort.SliceStable(ns, func(i, j int) bool {
		a, b := ns[i], ns[j]
		if healthRank[worst(a)] != healthRank[worst(b)] {
			return healthRank[worst(a)] < healthRank[worst(b)]
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Name < b.Name
	})
}

// worst is the worst health in a branch.
func worst(n *Node) string {
	h := n.Health
	for _, c := range n.Children {
		if cw := worst(c); healthRank[cw] < healthRank[h] {
			h = cw
		}
	}
	return h
}

// causes are the unhealthy nodes that nothing below them explains (and
// those that are causes of their own), deepest first, then commonest.
// With none, the progressing ones say what is under way.
func (w *walk) causes(root *Node) []Cause {
	var out []Cause
	var visit func(n *Node, depth int, health string)
	visit = func(n *Node, depth int, health string) {
		below := false
		for _, c := range n.Children {
			if worst(c) == health {
				below = true
			}
			visit(c, depth+1, health)
		}
		a := w.assessed[n.UID]
		own := a != nil && a.own
		if n.Health != health || (below && !own) {
			return
		}
		c := Cause{Kind: n.Kind, Count: max(n.Count, 1), Names: n.Names, Reason: n.Reason, Message: n.Message, Depth: depth}
		if len(c.Names) == 0 {
			c.Names = []string{n.Name}
		}
		if a != nil {
			c.Detail, c.Fix = a.detail, a.fix
		}
		out = append(out, c)
	}
	visit(root, 0, Unhealthy)
	if len(out) == 0 && root.Health != Healthy {
		// Nothing is wrong: what is under way says why it is not done.
		visit(root, 0, Progressing)
		kept := out[:0]
		for _, c := range out {
			if c.Reason != "" {
				kept = append(kept, c)
			}
		}
		out = kept
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Depth != out[j].Depth {
			return out[i].Depth > out[j].Depth
		}
		return out[i].Count > out[j].Count
	})
	return out
}

// markRootCause marks the way from the root to the node of cause c.
func markRootCause(n *Node, c Cause) bool {
	on := n.Kind == c.Kind && n.Reason == c.Reason && n.Message == c.Message && (n.Name == c.Names[0] || contains(n.Names, c.Names[0]))
	for _, ch := range n.Children {
		if markRootCause(ch, c) {
			on = true
		}
	}
	n.OnRootCause = on
	return on
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// summary is the answer in one line.
func summary(e *Explanation, root *assessment) string {
	what := fmt.Sprintf("%s %s", e.Object.Kind, qualified(e.Object))
	status := ""
	if root.status != "" {
		status = " (" + root.status + ")"
	}
	switch {
	case e.Health == Healthy:
		return what + " is healthy" + status
	case len(e.Causes) == 0:
		return what + " is " + strings.ToLower(e.Health) + status
	}
	state := "not converged"
	if e.Health == Progressing {
		state = "progressing"
	}
	return fmt.Sprintf("%s is %s%s: %s", what, state, status, causeLine(e.Causes[0]))
}

// causeLine says a cause in a line: "7 pods Unschedulable: 0/3 nodes …".
func causeLine(c Cause) string {
	who := c.Kind + " " + c.Names[0]
	if c.Count > 1 {
		who = fmt.Sprintf("%d %ss", c.Count, strings.ToLower(c.Kind))
	}
	line := who + " " + c.Reason
	if c.Message != "" {
		line += ": " + c.Message
	}
	return line
}

func qualified(r Ref) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}
