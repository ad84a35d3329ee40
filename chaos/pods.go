package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

var (
	deployments = client.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}
	pods        = client.Resource{Version: "v1", Kind: "Pod", Plural: "pods", Namespaced: true}
)

// rollout is a Deployment the harness keeps rolling out (a new template
// now and then) while it watches its pods: never more live pods than
// replicas plus surge, never two processes for one pod slot, and, once the
// faults stop, how long until every replica is updated and available.
type rollout struct {
	name     string
	replicas int
	surge    int
	selector map[string]string // nodeSelector
	command  []string

	mu       sync.Mutex
	maxLive  int
	over     []string // moments with too many live pods
	dupes    []string // slots with two live processes
	rolls    int
	podCount int      // pod changes seen
	events   []string // what the pod watch saw, for evidence
}

// note records a line of what the pod watch saw.
func (r *rollout) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

func (r *rollout) manifest(version int) []byte {
	sel := ""
	if len(r.selector) > 0 {
		b, _ := json.Marshal(r.selector)
		sel = `,"nodeSelector":` + string(b)
	}
	cmd, _ := jsonList(r.command)
	r.mu.Lock()
	replicas := r.replicas
	r.mu.Unlock()
	return []byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q,"namespace":%q},
"spec":{"replicas":%d,"selector":{"matchLabels":{"app":%q}},
"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":%d,"maxUnavailable":1}},
"template":{"metadata":{"labels":{"app":%q},"annotations":{"chaos/version":"%d"}},
"spec":{"terminationGracePeriodSeconds":2%s,"containers":[{"name":"c","command":%s}]}}}}`,
		r.name, namespace, replicas, r.name, r.surge, r.name, version, sel, cmd))
}

func jsonList(ss []string) (string, error) {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ",") + "]", nil
}

// apply writes version v of the Deployment, retrying while the API is away.
func (r *rollout) apply(ctx context.Context, a apis, v int) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _, err := a.client(0).Apply(actx, deployments, namespace, r.manifest(v))
		cancel()
		if err == nil {
			return nil
		}
		if !clock.Sleep(ctx, 300*time.Millisecond) {
			return fmt.Errorf("apply %s: %w", r.name, err)
		}
	}
}

// roll applies a new template every so often until ctx ends.
func (r *rollout) roll(ctx context.Context, a apis, every time.Duration) {
	for clock.Sleep(ctx, every) {
		_ = r.rollOnce(ctx, a)
	}
}

// rollOnce applies the next template version.
func (r *rollout) rollOnce(ctx context.Context, a apis) error {
	r.mu.Lock()
	v := r.rolls + 2
	r.mu.Unlock()
	if err := r.apply(ctx, a, v); err != nil {
		return err
	}
	r.mu.Lock()
	r.rolls++
	r.mu.Unlock()
	return nil
}

// watchPods follows the Deployment's pods and checks the surge bound at
// every change: pods not being deleted and not finished count as live. It
// judges only a caught-up view: a watch resumed after a gap replays each
// pod's latest state only (the store keeps one per key), so until its
// bookmark says it has caught up, the pods it shows never all existed at
// once.
func (r *rollout) watchPods(ctx context.Context, a apis) {
	live := map[string]bool{}
	rv := ""
	for ctx.Err() == nil {
		c := a.client(1)
		opts := client.ListOptions{LabelSelector: "app=" + r.name, AllowWatchBookmarks: true}
		if rv == "" {
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			l, err := c.List(lctx, pods, namespace, opts)
			cancel()
			if err != nil {
				clock.Sleep(ctx, 200*time.Millisecond)
				continue
			}
			live = map[string]bool{}
			for _, o := range l.Items {
				live[o.Metadata.Name] = isLive(o)
				r.note("listed %s rv=%s live=%t %s", o.Metadata.Name, o.Metadata.ResourceVersion, isLive(o), podState(o))
			}
			rv = l.Metadata.ResourceVersion
			r.note("list at %s", rv)
		}
		events, err := c.Watch(ctx, pods, namespace, "", opts, rv)
		if err != nil {
			if code := client.StatusCode(err); code == http.StatusGone || code == http.StatusGatewayTimeout {
				rv = ""
			}
			clock.Sleep(ctx, 200*time.Millisecond)
			continue
		}
		caughtUp := false
		for ev := range events {
			switch {
			case ev.Type == object.Error:
				if ev.Status != nil && ev.Status.Code == http.StatusGone {
					rv = ""
				}
				continue
			case ev.Type == object.Bookmark:
				caughtUp = true
				r.note("bookmark %s", ev.Object.Metadata.ResourceVersion)
			default:
				live[ev.Object.Metadata.Name] = ev.Type != object.Deleted && isLive(ev.Object)
				r.note("%s %s rv=%s live=%t %s", ev.Type, ev.Object.Metadata.Name, ev.Object.Metadata.ResourceVersion,
					live[ev.Object.Metadata.Name], podState(ev.Object))
			}
			rv = ev.Object.Metadata.ResourceVersion
			if caughtUp {
				r.check(live)
			}
		}
	}
}

// podState is what matters of a pod for liveness, briefly.
func podState(o *object.Object) string {
	p, err := kinds.DecodePod(o)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	return fmt.Sprintf("phase=%s node=%s deleting=%t", p.Status.Phase, p.Spec.NodeName, o.Metadata.Deleting())
}

func isLive(o *object.Object) bool {
	if o.Metadata.Deleting() {
		return false
	}
	p, err := kinds.DecodePod(o)
	return err == nil && !p.Terminal()
}

func (r *rollout) check(live map[string]bool) {
	n := 0
	for _, l := range live {
		if l {
			n++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.podCount++
	r.maxLive = max(r.maxLive, n)
	if n > r.replicas+r.surge {
		var names []string
		for name, l := range live {
			if l {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		r.over = append(r.over, fmt.Sprintf("%d live pods of %s at %s (bound %d): %v", n, r.name, time.Now().Format(time.StampMilli), r.replicas+r.surge, names))
	}
}

// scanSlots looks for two live processes of one container of one pod name
// on the node, every interval, until ctx ends.
func (r *rollout) scanSlots(ctx context.Context, node string, every time.Duration) {
	for clock.Sleep(ctx, every) {
		counts := map[string][]int{}
		for _, p := range nodeProcesses(node) {
			if p.pod != "" && strings.HasPrefix(p.pod, namespace+"/"+r.name+"-") {
				counts[p.pod+"/"+p.container] = append(counts[p.pod+"/"+p.container], p.pid)
			}
		}
		for slot, pids := range counts {
			if len(pids) > 1 {
				r.mu.Lock()
				r.dupes = append(r.dupes, fmt.Sprintf("%s has processes %v", slot, pids))
				r.mu.Unlock()
			}
		}
	}
}

// runNodeName is a node name of a run's own: run directories share their
// base name ("001"), and a name shared across runs would let one run count
// another's leftover processes as its pods' (or an agent adopt them).
func runNodeName(prefix, dir string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dir))
	return prefix + strconv.FormatUint(uint64(h.Sum32()), 36)
}

// killNodeProcesses ends what the agents of node left running: pods outlive
// their agent by design, so a run's last pods outlive the run unless it
// ends them.
func killNodeProcesses(node string) {
	for _, p := range nodeProcesses(node) {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

type nodeProc struct {
	pid            int
	pod, container string
}

// nodeProcesses lists the live container processes the agents of node
// started: process-group leaders carrying its markers.
func nodeProcesses(node string) []nodeProc {
	entries, _ := os.ReadDir("/proc")
	var out []nodeProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("HOMEOSTAT_NODE="+node+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" || fields[2] != e.Name() {
			continue // gone, or not the leader of its group
		}
		vars := map[string]string{}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if k, v, ok := strings.Cut(string(kv), "="); ok {
				vars[k] = v
			}
		}
		out = append(out, nodeProc{pid: pid, pod: vars["POD_NAMESPACE"] + "/" + vars["POD_NAME"], container: vars["HOMEOSTAT_CONTAINER"]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// converged reports whether the Deployment has rolled out its latest
// template to every replica and they are all available.
func (r *rollout) converged(ctx context.Context, a apis) bool {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	o, err := a.client(0).Get(gctx, deployments, namespace, r.name)
	if err != nil {
		return false
	}
	var st kinds.DeploymentStatus
	if o.DecodeStatus(&st) != nil {
		return false
	}
	return st.ObservedGeneration == o.Metadata.Generation && int(st.UpdatedReplicas) == r.replicas &&
		int(st.AvailableReplicas) == r.replicas && int(st.Replicas) == r.replicas
}

// waitConverged polls until the Deployment has converged and returns how
// long it took, or an error after within that shows where it stands.
func (r *rollout) waitConverged(ctx context.Context, a apis, within time.Duration) (time.Duration, error) {
	start := time.Now()
	for !r.converged(ctx, a) {
		if time.Since(start) > within || !clock.Sleep(ctx, 100*time.Millisecond) {
			return time.Since(start), fmt.Errorf("%s did not converge within %s:\n%s", r.name, within, r.describe(ctx, a))
		}
	}
	return time.Since(start), nil
}

// describe shows where the Deployment stands: its status, its
// ReplicaSets, its pods and the nodes.
func (r *rollout) describe(ctx context.Context, a apis) string {
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c := a.client(0)
	var b strings.Builder
	if o, err := c.Get(dctx, deployments, namespace, r.name); err == nil {
		fmt.Fprintf(&b, "    deployment generation %d, status %s\n", o.Metadata.Generation, o.Status)
	}
	rss := client.Resource{Group: "apps", Version: "v1", Kind: "ReplicaSet", Plural: "replicasets", Namespaced: true}
	for _, what := range []struct {
		res client.Resource
		ns  string
	}{{rss, namespace}, {pods, namespace}, {client.Resource{Version: "v1", Kind: "Node", Plural: "nodes"}, ""}} {
		l, err := c.List(dctx, what.res, what.ns, client.ListOptions{})
		if err != nil {
			fmt.Fprintf(&b, "    %s: %v\n", what.res.Plural, err)
			continue
		}
		for _, o := range l.Items {
			if what.res.Kind == "Node" || strings.HasPrefix(o.Metadata.Name, r.name+"-") {
				fmt.Fprintf(&b, "    %s %s deleting=%t spec=%s status=%s\n", what.res.Kind, o.Metadata.Name,
					o.Metadata.Deleting(), clip(o.Spec, 300), clip(o.Status, 600))
			}
		}
	}
	return b.String()
}

// writeEvents writes the recorded Events of the Deployment and what it
// owns, oldest first: the controllers' decisions, for a failed surge check.
func (r *rollout) writeEvents(ctx context.Context, a apis, dir string) {
	evs := client.Resource{Version: "v1", Kind: "Event", Plural: "events", Namespaced: true}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := a.client(0).List(lctx, evs, namespace, client.ListOptions{})
	if err != nil {
		return
	}
	var lines []string
	for _, o := range l.Items {
		e, err := kinds.EventOf(o)
		if err != nil || !strings.HasPrefix(e.InvolvedObject.Name, r.name) {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s..%s ×%d %s %s/%s %s: %s", e.FirstTimestamp, e.LastTimestamp, e.Count,
			e.Source.Component, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message))
	}
	sort.Strings(lines)
	_ = os.WriteFile(filepath.Join(dir, "events-"+r.name+".txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// scaleAndWait sets the Deployment's replicas and returns how long after
// since the write was acknowledged, the live pods first moved, and exactly
// that many live pods existed.
func (r *rollout) scaleAndWait(ctx context.Context, a apis, replicas int, since time.Time, within time.Duration) (actTime, error) {
	r.mu.Lock()
	from := r.replicas
	r.replicas = replicas
	r.mu.Unlock()
	if err := r.apply(ctx, a, 1); err != nil {
		return actTime{}, err
	}
	t := actTime{Acked: time.Since(since)}
	start := time.Now()
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := a.client(0).List(lctx, pods, namespace, client.ListOptions{LabelSelector: "app=" + r.name})
		cancel()
		if err == nil {
			live := 0
			for _, o := range l.Items {
				if isLive(o) {
					live++
				}
			}
			if live != from && t.Acted == 0 {
				t.Acted = time.Since(since)
			}
			if live == replicas {
				t.Done = time.Since(since)
				return t, nil
			}
		}
		if time.Since(start) > within || !clock.Sleep(ctx, 50*time.Millisecond) {
			return actTime{}, fmt.Errorf("%s did not reach %d pods within %s:\n%s", r.name, replicas, within, r.describe(ctx, a))
		}
	}
}
