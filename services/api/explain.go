package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/explain"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/rbac"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// Bounds of what an answer reads.
const (
	// explainHistory is how many of the root's reconciles it shows.
	explainHistory = 10
	// explainLogLines is how many lines of a crashed run it shows.
	explainLogLines = 5
	// explainLogs is how many crashed containers' logs it fetches.
	explainLogs = 3
)

// explainObject answers the explain subresource: why the object is or is
// not converged. It reads only what the caller may read; the rest is
// named as left out.
func (s *Service) explainObject(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	ctx := r.Context()
	root, err := ref.store.Get(ctx, ref.key())
	if err != nil {
		return storeError(ref, ref.name, err)
	}
	g := &gathering{s: s, ctx: ctx, in: explain.Input{Now: time.Now(), Root: root, Loops: map[string][]explain.Loop{},
		Events: map[string][]kinds.Event{}, PreviousLogs: map[string][]string{}}}
	g.descendants(root)
	g.nodes()
	g.loops(ref.res, root)
	for _, o := range g.in.Objects {
		if res, ok := g.resourceOf(o); ok {
			g.loops(res, o)
		}
	}
	if items, err := s.readHistory(r, ref, historyQuery{limit: explainHistory}); err == nil {
		g.in.History = items
	}
	// The answer without events and logs says whose to read.
	x := explain.NewExplainer(&g.in)
	e := x.Explain()
	g.events(e)
	if g.previousLogs(e) || len(g.in.Events) > 0 {
		e = x.Explain()
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}

// gathering reads one answer's input.
type gathering struct {
	s   *Service
	ctx context.Context
	in  explain.Input
}

// may says whether the caller may do verb on a resource (in ns); it names
// what it may not in the answer.
func (g *gathering) may(verb, group, resource, ns string) bool {
	u, ok := UserFrom(g.ctx)
	if !ok {
		return true // no authentication: anyone may do anything
	}
	a := rbac.Attributes{User: u.Name, Groups: u.Groups, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Namespace: ns}
	if g.s.decide(a) == nil {
		return true
	}
	what := resource
	if group != "" {
		what += "." + group
	}
	if !slices.Contains(g.in.Hidden, what) {
		g.in.Hidden = append(g.in.Hidden, what)
	}
	return false
}

// childKinds are the kinds each kind owns; a kind not named (a custom
// one) may own any workload or custom kind.
var childKinds = map[string][]string{
	"Deployment": {"apps/replicasets"}, "ReplicaSet": {"/pods"}, "Job": {"/pods"}, "DaemonSet": {"/pods"},
	"Pod": nil, "Node": nil, "Namespace": nil, "ConfigMap": nil, "Secret": nil, "Service": nil, "Event": nil,
}

var anyChildKinds = []string{"apps/deployments", "apps/replicasets", "apps/daemonsets", "batch/jobs", "/pods"}

// descendants reads, level by level, what the root owns.
func (g *gathering) descendants(root *object.Object) {
	ns := root.Metadata.Namespace
	owners := []*object.Object{root}
	lists := map[string][]*object.Object{}
	for depth := 0; depth < 4 && len(owners) > 0; depth++ {
		byUID := map[string]bool{}
		var want []string
		for _, o := range owners {
			byUID[o.Metadata.UID] = true
			kinds, known := childKinds[o.Kind]
			if !known {
				kinds = g.customKinds()
			}
			for _, k := range kinds {
				if !slices.Contains(want, k) {
					want = append(want, k)
				}
			}
		}
		var next []*object.Object
		for _, k := range want {
			items, ok := lists[k]
			if !ok {
				items = g.list(k, ns)
				lists[k] = items
			}
			for _, o := range items {
				for _, ref := range o.Metadata.OwnerReferences {
					if byUID[ref.UID] {
						next = append(next, o)
						break
					}
				}
			}
		}
		g.in.Objects = append(g.in.Objects, next...)
		owners = next
	}
}

// customKinds are the workload kinds and every custom kind.
func (g *gathering) customKinds() []string {
	out := append([]string{}, anyChildKinds...)
	for _, res := range g.s.reg.Resources() {
		if res.Custom && res.Namespaced {
			out = append(out, res.Group+"/"+res.Plural)
		}
	}
	return out
}

// list reads a kind ("group/plural") in a namespace, if the caller may.
func (g *gathering) list(groupPlural, ns string) []*object.Object {
	group, plural := splitGroupPlural(groupPlural)
	res, ok := g.lookup(group, plural)
	if !ok || !res.Namespaced || !g.may("list", group, plural, ns) {
		return nil
	}
	st, err := g.s.storeFor(g.ctx, res)
	if err != nil {
		return nil
	}
	out, err := st.List(g.ctx, bus.ListOptions{Namespace: ns})
	if err != nil {
		return nil
	}
	return out.Items
}

func splitGroupPlural(s string) (group, plural string) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:]
		}
	}
	return "", s
}

// nodes reads the nodes the pods are on.
func (g *gathering) nodes() {
	names := map[string]bool{}
	for _, o := range append([]*object.Object{g.in.Root}, g.in.Objects...) {
		if o.Kind != "Pod" {
			continue
		}
		var spec struct {
			NodeName string `json:"nodeName"`
		}
		if o.DecodeSpec(&spec) == nil && spec.NodeName != "" {
			names[spec.NodeName] = true
		}
	}
	if len(names) == 0 || !g.may("get", "", "nodes", "") {
		return
	}
	st, err := g.s.storeFor(g.ctx, g.s.reg.MustLookup("", "nodes"))
	if err != nil {
		return
	}
	g.in.Nodes = map[string]*object.Object{}
	if len(names) > nodesByGet {
		if list, err := st.List(g.ctx, bus.ListOptions{}); err == nil {
			for _, o := range list.Items {
				if names[o.Metadata.Name] {
					g.in.Nodes[o.Metadata.Name] = o
				}
			}
		}
		return
	}
	for n := range names {
		if o, err := st.Get(g.ctx, n); err == nil {
			g.in.Nodes[n] = o
		}
	}
}

// nodesByGet is how many nodes are read one by one; more are listed.
const nodesByGet = 16

// events reads the events about the root and what lies between it and
// its pods, and about the first pod of each kind of trouble: the events of
// one object are read without the others' (named <object>.<hash>).
func (g *gathering) events(e *explain.Explanation) {
	if !g.may("list", "", "events", g.in.Root.Metadata.Namespace) {
		return
	}
	res, _ := g.lookup("", "events")
	st, err := g.s.storeFor(g.ctx, res)
	if err != nil {
		return
	}
	about := map[string]*object.Object{g.in.Root.Metadata.UID: g.in.Root}
	for _, o := range g.in.Objects {
		if o.Kind != "Pod" {
			about[o.Metadata.UID] = o
		}
	}
	for _, c := range e.Causes {
		for _, o := range g.in.Objects {
			if o.Kind == c.Kind && o.Metadata.Name == c.Names[0] {
				about[o.Metadata.UID] = o
			}
		}
	}
	for uid, o := range about {
		ns := o.Metadata.Namespace
		if ns == "" {
			ns = "default" // where events about cluster-scoped objects go
		}
		list, err := st.List(g.ctx, bus.ListOptions{Namespace: ns, Under: o.Metadata.Name})
		if err != nil {
			continue
		}
		for _, eo := range list.Items {
			if ev, err := kinds.EventOf(eo); err == nil && ev.InvolvedObject.UID == uid {
				g.in.Events[uid] = append(g.in.Events[uid], ev)
			}
		}
	}
}

// lookup finds the served resource of a group and plural.
func (g *gathering) lookup(group, plural string) (*schemas.Resource, bool) {
	for _, res := range g.s.reg.Resources() {
		if res.Group == group && res.Plural == plural {
			return res, true
		}
	}
	return nil, false
}

// resourceOf is the served resource of an object read.
func (g *gathering) resourceOf(o *object.Object) (*schemas.Resource, bool) {
	return g.s.reg.ForKind(o.APIVersion, o.Kind)
}

// loops reads where each controller of o's kind stands with it: the
// controllers the configuration names for the kind, and any other that
// has reconciled it lately.
func (g *gathering) loops(res *schemas.Resource, o *object.Object) {
	if o.Kind == "Pod" {
		return // no controller's queue holds pods: the scheduler and agents do
	}
	gr, key := res.GroupResource(), o.Key()
	var hist []reconcile.HistoryEntry
	_ = g.s.history.Read(g.ctx, gr, key, time.Time{}, func(data []byte) error {
		var e reconcile.HistoryEntry
		if json.Unmarshal(data, &e) == nil {
			hist = append(hist, e)
		}
		return nil
	})
	controllers := append([]string{}, g.s.cfg.Controllers[gr]...)
	for _, e := range hist {
		if !slices.Contains(controllers, e.Controller) {
			controllers = append(controllers, e.Controller)
		}
	}
	records, _ := g.s.retries.ForObject(g.ctx, gr, key)
	for _, c := range controllers {
		p := explain.LoopParts{Controller: c, Object: explain.RefOf(o)}
		for _, e := range hist {
			if e.Controller == c {
				p.History = append(p.History, e)
			}
		}
		if raw, ok := records[c]; ok {
			var rec reconcile.RetryRecord
			if json.Unmarshal(raw, &rec) == nil {
				p.Retry = &rec
			}
		}
		p.Queued, _ = g.s.bus.QueueEntry(g.ctx, c, key)
		uid := o.Metadata.UID
		g.in.Loops[uid] = append(g.in.Loops[uid], explain.StateOf(p, g.in.Now))
	}
}

// previousLogs reads the last lines of the previous run of the first
// crashed containers of an answer's causes.
func (g *gathering) previousLogs(e *explain.Explanation) bool {
	if !hasCrash(e) || !g.may("get", "", "pods/log", g.in.Root.Metadata.Namespace) {
		return false
	}
	n := 0
	for _, c := range e.Causes {
		if c.Kind != "Pod" || c.Reason != explain.ReasonCrashLoop || n >= explainLogs {
			continue
		}
		for _, o := range append([]*object.Object{g.in.Root}, g.in.Objects...) {
			if o.Kind != "Pod" || o.Metadata.Name != c.Names[0] {
				continue
			}
			p, err := kinds.DecodePod(o)
			if err != nil || p.Spec.NodeName == "" {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil && cs.State.Waiting.Reason == explain.ReasonCrashLoop {
					g.in.PreviousLogs[explain.LogKey(p.Metadata.Name, cs.Name)] = g.tail(p, cs.Name)
					n++
				}
			}
		}
	}
	return n > 0
}

func hasCrash(e *explain.Explanation) bool {
	for _, c := range e.Causes {
		if c.Reason == explain.ReasonCrashLoop {
			return true
		}
	}
	return false
}

func (g *gathering) tail(p *kinds.Pod, container string) []string {
	q := url.Values{"container": {container}, "previous": {"true"}, "tailLines": {strconv.Itoa(explainLogLines)}}
	ctx, cancel := context.WithTimeout(g.ctx, 2*time.Second)
	defer cancel()
	resp, e := g.s.agentLog(ctx, p, q)
	if e != nil {
		return []string{"(its log could not be read: " + e.message + ")"}
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && len(lines) < explainLogLines {
		lines = append(lines, sc.Text())
	}
	return lines
}
