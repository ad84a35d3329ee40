package explain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// Reasons explain gives that no object's own state names.
const (
	ReasonUnschedulable        = "Unschedulable"
	ReasonCrashLoop            = "CrashLoopBackOff"
	ReasonStartError           = "StartError"
	ReasonConfigError          = "CreateContainerConfigError"
	ReasonReadinessProbeFailed = "ReadinessProbeFailed"
	ReasonNodeNotReady         = "NodeNotReady"
)

// assessPod judges a pod: scheduled or why not, its node, its containers.
func (w *walk) assessPod(o *object.Object) *assessment {
	p, err := w.pod(o)
	if err != nil {
		return &assessment{health: Unknown, status: "unreadable", message: err.Error()}
	}
	a := &assessment{health: Progressing, status: string(p.Status.Phase)}
	switch {
	case p.Status.Phase == kinds.PodSucceeded:
		a.health, a.status = Healthy, "Completed"
	case p.Status.Phase == kinds.PodFailed:
		a.health, a.status, a.reason, a.message = Unhealthy, "Failed", p.Status.Reason, p.Status.Message
		w.containers(p, a)
		if a.reason == "" {
			a.reason = "Failed"
		}
	case p.Spec.NodeName == "":
		w.unscheduled(p, a)
	default:
		w.bound(p, a)
	}
	return a
}

func (w *walk) unscheduled(p *kinds.Pod, a *assessment) {
	c := condition(p.Status.Conditions, kinds.PodScheduled)
	if c == nil || c.Status != object.ConditionFalse || c.Reason != ReasonUnschedulable {
		a.reason, a.message = "Scheduling", "waiting for the scheduler to place it"
		return
	}
	a.health, a.reason, a.message = Unhealthy, ReasonUnschedulable, c.Message
	a.group = ReasonUnschedulable + "|" + c.Message
	a.fix = w.unschedulableFix(p, c.Message)
}

func (w *walk) bound(p *kinds.Pod, a *assessment) {
	if n := w.in.Nodes[p.Spec.NodeName]; n != nil {
		if na := assessNode(n); na.health != Healthy {
			a.health, a.reason, a.message, a.fix = Unhealthy, ReasonNodeNotReady, na.message, na.fix
			a.detail, a.node, a.group = na.detail, n, ReasonNodeNotReady+"|"+n.Metadata.Name
			return
		}
	}
	w.containers(p, a)
	if a.reason == "" && p.Status.Phase == kinds.PodRunning && p.Ready() {
		a.health, a.status = Healthy, "Running"
	}
}

// containers finds the first container that explains a pod that is not
// ready: one crashing, refused its configuration, or failing its
// readiness probe.
func (w *walk) containers(p *kinds.Pod, a *assessment) {
	all := append(append([]kinds.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range all {
		if w.container(p, cs, a) {
			return
		}
	}
	if p.Status.Phase != kinds.PodRunning || p.Ready() {
		return
	}
	c := condition(p.Status.Conditions, kinds.PodReady)
	if c != nil && strings.Contains(c.Message, "probe failed") {
		a.health, a.reason, a.message = Unhealthy, ReasonReadinessProbeFailed, c.Message
		name := unreadyContainer(c.Message)
		a.group = ReasonReadinessProbeFailed + "|" + name
		a.fix = fmt.Sprintf("make the readiness probe pass, or fix it (%scontainers[%s].readinessProbe)", w.prefix, name)
		return
	}
	a.reason, a.message = "NotReadyYet", "running, not ready yet"
}

// container judges one container, and says whether it explains the pod.
func (w *walk) container(p *kinds.Pod, cs kinds.ContainerStatus, a *assessment) bool {
	switch {
	case cs.State.Waiting != nil && cs.State.Waiting.Reason == ReasonConfigError:
		a.health, a.reason, a.message = Unhealthy, ReasonConfigError, cs.State.Waiting.Message
		a.group = ReasonConfigError + "|" + cs.State.Waiting.Message
		a.fix = w.configFix(p, cs.Name, cs.State.Waiting.Message)
		return true
	case cs.State.Waiting != nil && cs.State.Waiting.Reason == ReasonCrashLoop,
		cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 && p.Status.Phase == kinds.PodFailed:
		w.crashed(p, cs, a)
		return true
	case cs.State.Waiting != nil:
		a.reason, a.message = cs.State.Waiting.Reason, cs.State.Waiting.Message
	}
	return false
}

// crashed explains a container that keeps exiting (or exited for good).
func (w *walk) crashed(p *kinds.Pod, cs kinds.ContainerStatus, a *assessment) {
	t := cs.LastTerminationState.Terminated
	if cs.State.Terminated != nil {
		t = cs.State.Terminated
	}
	if a.health != Unhealthy || a.reason == "" || a.reason == "Failed" {
		a.reason = ReasonCrashLoop
	}
	a.health = Unhealthy
	if t == nil {
		a.message = fmt.Sprintf("container %s keeps exiting (%d restarts)", cs.Name, cs.RestartCount)
		a.group = a.reason + "|" + cs.Name
		return
	}
	if t.Reason == ReasonStartError {
		a.reason = ReasonStartError
		a.message = fmt.Sprintf("container %s cannot start: %s", cs.Name, t.Message)
		a.group = ReasonStartError + "|" + cs.Name + "|" + t.Message
		a.fix = fmt.Sprintf("fix %scontainers[%s].command: the program must exist on the node", w.prefix, cs.Name)
		return
	}
	how := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Signal != 0 {
		how = fmt.Sprintf("signal %d", t.Signal)
	}
	a.message = fmt.Sprintf("container %s exited with %s (%s) after %s, %d restarts", cs.Name, how, t.Reason,
		t.FinishedAt.Sub(t.StartedAt).Round(1e9), cs.RestartCount)
	if t.Message != "" {
		a.detail = append(a.detail, t.Message)
	}
	if lines := w.in.PreviousLogs[LogKey(p.Metadata.Name, cs.Name)]; len(lines) > 0 {
		a.detail = append(a.detail, fmt.Sprintf("last lines of the previous run of %s:", cs.Name))
		for _, l := range lines {
			a.detail = append(a.detail, "  "+l)
		}
	}
	a.group = a.reason + "|" + cs.Name + "|" + how + "|" + t.Reason
	a.fix = fmt.Sprintf("read why it exits (homeostat logs %s -c %s --previous) and fix %scontainers[%s].command or what it needs",
		p.Metadata.Name, cs.Name, w.prefix, cs.Name)
	if t.Reason == "Unhealthy" {
		a.fix = fmt.Sprintf("its liveness probe kills it: make the probe pass, or fix it (%scontainers[%s].livenessProbe)", w.prefix, cs.Name)
	}
}

var missingConfig = regexp.MustCompile(`(configmap|secret) "([^"]+)"`)

func (w *walk) configFix(p *kinds.Pod, container, msg string) string {
	m := missingConfig.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Sprintf("fix what %scontainers[%s] refers to: %s", w.prefix, container, msg)
	}
	return fmt.Sprintf("create %s %s in namespace %s (or mark the reference optional), or stop referring to it in %scontainers[%s]",
		m[1], m[2], p.Metadata.Namespace, w.prefix, container)
}

// unreadyContainer reads the container a Ready condition's message names
// first ("containers with unready status: [web]...").
func unreadyContainer(msg string) string {
	_, rest, ok := strings.Cut(msg, "[")
	if !ok {
		return ""
	}
	names, _, _ := strings.Cut(rest, "]")
	first, _, _ := strings.Cut(names, " ")
	return first
}

// unschedulableReason reads the commonest reason of the scheduler's
// message ("0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had
// untolerated taint {dedicated: db}.").
func unschedulableReason(msg string) string {
	_, list, ok := strings.Cut(msg, "available: ")
	if !ok {
		return ""
	}
	best, bestN := "", -1
	for _, part := range strings.Split(strings.TrimSuffix(list, "."), ", ") {
		n, reason, ok := strings.Cut(part, " ")
		k, err := strconv.Atoi(n)
		if ok && err == nil && k > bestN {
			best, bestN = reason, k
		} else if !ok || err != nil {
			return part
		}
	}
	return best
}

// unschedulableFix says what would let the pod fit, from the scheduler's
// commonest reason.
func (w *walk) unschedulableFix(p *kinds.Pod, msg string) string {
	reason := unschedulableReason(msg)
	switch {
	case reason == "Insufficient cpu" || reason == "Insufficient memory":
		res := strings.TrimPrefix(reason, "Insufficient ")
		total, biggest := requests(p, res)
		return fmt.Sprintf("no node has %s %s free: add a node or lower %scontainers[%s].resources.requests.%s",
			total, res, w.prefix, biggest, res)
	case strings.HasPrefix(reason, "node(s) had untolerated taint"):
		taint := strings.TrimPrefix(reason, "node(s) had untolerated taint ")
		return fmt.Sprintf("the nodes are tainted %s: add a toleration to %stolerations, or remove the taint from a node", taint, w.prefix)
	case reason == "node(s) didn't match Pod's node affinity/selector":
		return fmt.Sprintf("no node has the labels it asks for: label a node, or change %snodeSelector (or its node affinity)", w.prefix)
	case reason == "Too many pods":
		return "every node holds as many pods as it may: add a node"
	case reason == "node(s) were not ready":
		return "no node is ready: bring their agents back (homeostat describe nodes)"
	case reason == "node(s) were unschedulable":
		return "the nodes are cordoned: uncordon one (kubectl uncordon NODE)"
	case strings.Contains(reason, "anti-affinity"):
		return fmt.Sprintf("every node already runs a pod it must not share one with: add nodes, or relax %saffinity.podAntiAffinity", w.prefix)
	case strings.Contains(reason, "topology spread"):
		return fmt.Sprintf("placing it would skew its spread too far: add nodes in other domains, or relax %stopologySpreadConstraints", w.prefix)
	case strings.Contains(msg, "no nodes are registered"):
		return "no node has joined: start a node agent (homeostat nodeagent)"
	}
	return "change what the scheduler's message names, or add nodes that allow it"
}

// requests sums a pod's requests of a resource, as written ("2",
// "500m", "1Gi"), and names the container asking most.
func requests(p *kinds.Pod, res string) (total, biggest string) {
	var sum, most int64
	for _, c := range p.Spec.Containers {
		q := c.Resources.Requests[res]
		v := q.MilliValue()
		sum += v
		if v > most || biggest == "" {
			most, biggest = v, c.Name
		}
	}
	return formatQuantity(sum, res), biggest
}

// formatQuantity writes a sum of thousandths of cores or bytes.
func formatQuantity(milli int64, res string) string {
	if res == "cpu" {
		if milli%1000 == 0 {
			return strconv.FormatInt(milli/1000, 10)
		}
		return strconv.FormatInt(milli, 10) + "m"
	}
	b := milli / 1000
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if b >= u.size && b%u.size == 0 {
			return strconv.FormatInt(b/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(b, 10)
}
