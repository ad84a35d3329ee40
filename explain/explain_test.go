package explain_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/explain"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func obj(t *testing.T, doc string) *object.Object {
	t.Helper()
	o, err := object.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return o
}

// deployment is a Deployment of n replicas whose status counts ready.
func deployment(t *testing.T, n, ready int, extraSpec string) *object.Object {
	return obj(t, fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","uid":"d1","generation":1},
	 "spec":{"replicas":%d,"selector":{"matchLabels":{"app":"web"}},%s"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","command":["x"]}]}}},
	 "status":{"observedGeneration":1,"replicas":%d,"updatedReplicas":%d,"readyReplicas":%d,"availableReplicas":%d,"unavailableReplicas":%d}}`,
		n, extraSpec, n, n, ready, ready, n-ready))
}

func replicaSet(t *testing.T, n, ready int) *object.Object {
	return obj(t, fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-7d9f","namespace":"default","uid":"rs1","generation":1,
	  "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"d1","controller":true}]},
	 "spec":{"replicas":%d,"selector":{"matchLabels":{"app":"web"}},"template":{"spec":{"containers":[{"name":"web","command":["x"]}]}}},
	 "status":{"observedGeneration":1,"replicas":%d,"readyReplicas":%d,"availableReplicas":%d}}`, n, n, ready, ready))
}

// pod is a pod of the ReplicaSet with a spec and status fragment.
func pod(t *testing.T, i int, node, spec, status string) *object.Object {
	if spec == "" {
		spec = `"containers":[{"name":"web","command":["x"]}]`
	}
	if node != "" {
		spec += `,"nodeName":"` + node + `"`
	}
	return obj(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d9f-%d","namespace":"default","uid":"p%d",
	  "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9f","uid":"rs1","controller":true}]},
	 "spec":{%s},"status":{%s}}`, i, i, spec, status))
}

const running = `"phase":"Running","conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"web","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-11-25T11:00:00Z"}}}]`

func node(t *testing.T, name, readyStatus, taints string) *object.Object {
	return obj(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","uid":"n-%s"},"spec":{"taints":[%s]},
	 "status":{"conditions":[{"type":"Ready","status":"%s","reason":"NodeStatusUnknown","message":"Kubelet stopped posting node status."}]}}`,
		name, name, taints, readyStatus))
}

// scenario is a Deployment with one ReplicaSet and its pods.
func scenario(t *testing.T, d *object.Object, pods ...*object.Object) explain.Input {
	ready := 0
	for _, p := range pods {
		if strings.Contains(string(p.Status), `"Ready","status":"True"`) {
			ready++
		}
	}
	objs := append([]*object.Object{replicaSet(t, len(pods), ready)}, pods...)
	return explain.Input{Now: now, Root: d, Objects: objs, Nodes: map[string]*object.Object{}, Loops: map[string][]explain.Loop{}}
}

func podsWith(t *testing.T, n int, node, spec, status string) []*object.Object {
	var out []*object.Object
	for i := range n {
		out = append(out, pod(t, i, node, spec, status))
	}
	return out
}

// TestExplainScenarios: for each way a Deployment can fail to converge,
// the answer's root cause names the reason, what it says, how many share
// it, and the fix; the summary says the same in a line.
func TestExplainScenarios(t *testing.T) {
	crash := `"phase":"Running","conditions":[{"type":"Ready","status":"False"}],"containerStatuses":[{"name":"web","ready":false,"restartCount":5,
	  "state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":3,"reason":"Error","startedAt":"2026-11-25T11:59:00Z","finishedAt":"2026-11-25T11:59:02Z"}}}]`
	cases := []struct {
		name  string
		input func(t *testing.T) explain.Input
		// what the root cause must say
		reason, message, fix string
		count                int
	}{
		{"unschedulable for cpu", func(t *testing.T) explain.Input {
			pods := podsWith(t, 7, "", `"containers":[{"name":"side","command":["x"],"resources":{"requests":{"cpu":"500m"}}},{"name":"web","command":["x"],"resources":{"requests":{"cpu":"1500m"}}}]`,
				`"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available: 3 Insufficient cpu."}]`)
			for i := 7; i < 10; i++ {
				pods = append(pods, pod(t, i, "n1", "", running))
			}
			return scenario(t, deployment(t, 10, 3, ""), pods...)
		}, "Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.",
			"no node has 2 cpu free: add a node or lower spec.template.spec.containers[web].resources.requests.cpu", 7},
		{"untolerated taint", func(t *testing.T) explain.Input {
			return scenario(t, deployment(t, 2, 0, ""), podsWith(t, 2, "", "",
				`"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available: 2 node(s) had untolerated taint {dedicated: db}, 1 Insufficient memory."}]`)...)
		}, "Unschedulable", "", "the nodes are tainted {dedicated: db}: add a toleration to spec.template.spec.tolerations", 2},
		{"crash loop", func(t *testing.T) explain.Input {
			in := scenario(t, deployment(t, 3, 0, ""), podsWith(t, 3, "n1", "", crash)...)
			in.PreviousLogs = map[string][]string{"web-7d9f-0/web": {"panic: config missing"}}
			return in
		}, "CrashLoopBackOff", "container web exited with exit code 3 (Error) after 2s, 5 restarts",
			"read why it exits (homeostat logs web-7d9f-0 -c web --previous)", 3},
		{"command not found", func(t *testing.T) explain.Input {
			return scenario(t, deployment(t, 1, 0, ""), pod(t, 0, "n1", "", `"phase":"Pending","containerStatuses":[{"name":"web","restartCount":2,
			  "state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":128,"reason":"StartError","message":"exec: \"nope\": executable file not found in $PATH"}}}]`))
		}, "StartError", `container web cannot start: exec: "nope": executable file not found in $PATH`, "fix spec.template.spec.containers[web].command", 1},
		{"missing ConfigMap", func(t *testing.T) explain.Input {
			return scenario(t, deployment(t, 2, 0, ""), podsWith(t, 2, "n1", "", `"phase":"Pending","containerStatuses":[{"name":"web","ready":false,"restartCount":0,
			  "state":{"waiting":{"reason":"CreateContainerConfigError","message":"configmap \"app-config\" not found"}}}]`)...)
		}, "CreateContainerConfigError", `configmap "app-config" not found`, "create configmap app-config in namespace default", 2},
		{"failing readiness probe", func(t *testing.T) explain.Input {
			return scenario(t, deployment(t, 2, 0, ""), podsWith(t, 2, "n1", "", `"phase":"Running","conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady",
			  "message":"containers with unready status: [web]: web: Readiness probe failed: HTTP probe failed with statuscode: 503"}],
			  "containerStatuses":[{"name":"web","ready":false,"restartCount":0,"state":{"running":{"startedAt":"2026-11-25T11:00:00Z"}}}]`)...)
		}, "ReadinessProbeFailed", "Readiness probe failed: HTTP probe failed with statuscode: 503", "spec.template.spec.containers[web].readinessProbe", 2},
		{"node not ready", func(t *testing.T) explain.Input {
			in := scenario(t, deployment(t, 2, 0, ""), podsWith(t, 2, "n1", "", running)...)
			in.Nodes["n1"] = node(t, "n1", "Unknown", `{"key":"node.kubernetes.io/unreachable","effect":"NoExecute"}`)
			return in
		}, "NodeNotReady", "node n1 is not ready: Kubelet stopped posting node status.", "bring back the agent of node n1", 1},
		{"paused", func(t *testing.T) explain.Input {
			d := deployment(t, 3, 3, `"paused":true,`)
			d.Metadata.Generation = 2 // a template change the paused Deployment does not roll out
			return scenario(t, d, podsWith(t, 3, "n1", "", running)...)
		}, "Paused", "the Deployment is paused", "kubectl rollout resume deployment/web", 1},
		{"progress deadline", func(t *testing.T) explain.Input {
			d := deployment(t, 2, 0, "")
			d.Status = json.RawMessage(`{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"unavailableReplicas":2,
			  "conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"ReplicaSet \"web-7d9f\" has timed out progressing."}]}`)
			return scenario(t, d, podsWith(t, 2, "n1", "", `"phase":"Running","containerStatuses":[{"name":"web","ready":false,"state":{"running":{}}}]`)...)
		}, "ProgressDeadlineExceeded", `ReplicaSet "web-7d9f" has timed out progressing.`, "", 1},
		{"blocked deletion", func(t *testing.T) explain.Input {
			d := deployment(t, 1, 1, "")
			at := now.Add(-10 * time.Minute)
			d.Metadata.DeletionTimestamp = &at
			d.Metadata.Finalizers = []string{"example.com/cleanup"}
			return scenario(t, d, pod(t, 0, "n1", "", running))
		}, "DeletionBlocked", "waits for finalizers example.com/cleanup", "run the controller that owns example.com/cleanup", 1},
		{"failing controller", func(t *testing.T) explain.Input {
			in := scenario(t, deployment(t, 1, 0, ""))
			in.Loops["rs1"] = []explain.Loop{{Controller: "replicaset", State: explain.StateBackingOff, Attempt: 6, LastError: "pods \"web-7d9f-0\": quota exceeded"}}
			return in
		}, "ReconcileFailing", `the replicaset controller fails on it (attempt 6): pods "web-7d9f-0": quota exceeded`, "fix what the error names", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := explain.Explain(c.input(t))
			rc := e.RootCause
			if rc == nil {
				t.Fatalf("no root cause: %+v", e)
			}
			if rc.Reason != c.reason || !strings.Contains(rc.Message, c.message) || !strings.Contains(rc.Fix, c.fix) {
				t.Fatalf("root cause %+v\nwant reason %q, message with %q, fix with %q", rc, c.reason, c.message, c.fix)
			}
			if e.Causes[0].Count != c.count {
				t.Fatalf("the first cause counts %d objects, want %d: %+v", e.Causes[0].Count, c.count, e.Causes[0])
			}
			if e.Health == explain.Healthy || !strings.Contains(e.Summary, "not converged") || !strings.Contains(e.Summary, c.reason) {
				t.Fatalf("summary %q (health %s)", e.Summary, e.Health)
			}
			if !onPath(e.Tree, rc) {
				t.Fatalf("the tree does not lead to the root cause:\n%s", text(t, e))
			}
		})
	}
}

// onPath: the tree is marked from its root down to a node of the root
// cause.
func onPath(n *explain.Node, rc *explain.RootCause) bool {
	if !n.OnRootCause {
		return false
	}
	if n.Reason == rc.Reason && (n.Name == rc.Object.Name || contains(n.Names, rc.Object.Name)) {
		return true
	}
	for _, c := range n.Children {
		if onPath(c, rc) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func text(t *testing.T, e *explain.Explanation) string {
	var b bytes.Buffer
	if err := explain.Text(&b, e, now); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestExplainGroupsAndRanks: identical pods are one group, unhealthy
// groups come first, the deepest cause (a pod's node) ranks before the
// pods it explains, and the crash's last log lines are in its detail.
func TestExplainGroupsAndRanks(t *testing.T) {
	crash := `"phase":"Running","containerStatuses":[{"name":"web","ready":false,"restartCount":5,"state":{"waiting":{"reason":"CrashLoopBackOff"}},
	  "lastState":{"terminated":{"exitCode":1,"reason":"Error"}}}]`
	pods := []*object.Object{pod(t, 0, "n1", "", running), pod(t, 1, "n1", "", running), pod(t, 2, "n2", "", running),
		pod(t, 3, "n1", "", crash), pod(t, 4, "n1", "", crash)}
	in := scenario(t, deployment(t, 5, 3, ""), pods...)
	in.Nodes["n2"] = node(t, "n2", "Unknown", "")
	in.PreviousLogs = map[string][]string{"web-7d9f-3/web": {"starting", "panic: no database"}}
	e := explain.Explain(in)
	rs := e.Tree.Children[0]
	var shape []string
	for _, c := range rs.Children {
		shape = append(shape, fmt.Sprintf("%s:%d:%s", c.Health, max(c.Count, 1), c.Reason))
	}
	if got := strings.Join(shape, " "); got != "Unhealthy:2:CrashLoopBackOff Unhealthy:1:NodeNotReady Healthy:2:" {
		t.Fatalf("the ReplicaSet's children: %s\n%s", got, text(t, e))
	}
	if e.Causes[0].Kind != "Node" || e.Causes[1].Reason != "CrashLoopBackOff" || e.Causes[1].Count != 2 {
		t.Fatalf("causes, deepest first: %+v", e.Causes)
	}
	if d := strings.Join(e.Causes[1].Detail, "\n"); !strings.Contains(d, "panic: no database") {
		t.Fatalf("the crash's detail lacks its last lines: %q", d)
	}
	out := text(t, e)
	for _, want := range []string{"2 Pods (web-7d9f-3, web-7d9f-4)", "Root cause: Node n2: NodeNotReady", "panic: no database"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the text lacks %q:\n%s", want, out)
		}
	}
}

// TestExplainHealthyIsOneLine: a converged object answers in a line.
func TestExplainHealthyIsOneLine(t *testing.T) {
	e := explain.Explain(scenario(t, deployment(t, 3, 3, ""), podsWith(t, 3, "n1", "", running)...))
	if e.Health != explain.Healthy || e.RootCause != nil || len(e.Causes) != 0 {
		t.Fatalf("a healthy Deployment: %+v", e)
	}
	if got := text(t, e); got != "Deployment default/web is healthy (3/3 ready)\n" {
		t.Fatalf("text %q", got)
	}
}

// TestExplainOtherKinds: a failed Job names its pods' crash; a custom
// kind is judged by its Ready condition; a pod alone says its own cause
// with the fix's path in the pod.
func TestExplainOtherKinds(t *testing.T) {
	job := obj(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"count","namespace":"default","uid":"j1"},
	  "spec":{"template":{"spec":{"containers":[{"name":"c","command":["x"]}]}}},
	  "status":{"failed":4,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}}`)
	failed := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"count-0","namespace":"default","uid":"jp0","ownerReferences":[{"kind":"Job","name":"count","uid":"j1"}]},
	  "spec":{"restartPolicy":"Never","nodeName":"n1","containers":[{"name":"c","command":["x"]}]},
	  "status":{"phase":"Failed","containerStatuses":[{"name":"c","state":{"terminated":{"exitCode":2,"reason":"Error"}}}]}}`)
	e := explain.Explain(explain.Input{Now: now, Root: job, Objects: []*object.Object{failed}})
	if e.RootCause == nil || e.RootCause.Reason != "CrashLoopBackOff" || !strings.Contains(e.RootCause.Message, "exit code 2") {
		t.Fatalf("a failed Job: %+v\n%s", e.RootCause, text(t, e))
	}
	if len(e.Causes) != 2 || e.Causes[1].Reason != "BackoffLimitExceeded" {
		t.Fatalf("a failed Job's own cause: %+v", e.Causes)
	}

	widget := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default","uid":"w1"},
	  "status":{"conditions":[{"type":"Ready","status":"False","reason":"NoBackend","message":"the backend is unreachable"}]}}`)
	e = explain.Explain(explain.Input{Now: now, Root: widget})
	if e.RootCause == nil || e.RootCause.Reason != "NoBackend" || e.Summary != "Widget default/w is not converged (Ready=False): Widget w NoBackend: the backend is unreachable" {
		t.Fatalf("a custom kind: %+v %q", e.RootCause, e.Summary)
	}

	svc := obj(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"default","uid":"s1"},
	  "spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":8000,"targetPort":"web"}]},
	  "status":{"conditions":[{"type":"EndpointsReady","status":"False","reason":"TargetPortNotFound","message":"port http: none of the 3 pods selected declares a TCP port named \"web\""}]}}`)
	e = explain.Explain(explain.Input{Now: now, Root: svc})
	if e.RootCause == nil || e.RootCause.Reason != "TargetPortNotFound" || !strings.Contains(e.Summary, "EndpointsReady=False") {
		t.Fatalf("a Service without endpoints: %+v %q", e.RootCause, e.Summary)
	}

	alone := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big","namespace":"default","uid":"b1"},
	  "spec":{"containers":[{"name":"c","command":["x"],"resources":{"requests":{"memory":"64Gi"}}}]},
	  "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/1 nodes are available: 1 Insufficient memory."}]}}`)
	e = explain.Explain(explain.Input{Now: now, Root: alone})
	if e.RootCause == nil || e.RootCause.Fix != "no node has 64Gi memory free: add a node or lower spec.containers[c].resources.requests.memory" {
		t.Fatalf("a pod alone: %+v", e.RootCause)
	}
}

// TestStateOf: where a controller stands with a key, from its queue, its
// retry record and its history.
func TestStateOf(t *testing.T) {
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	done := reconcile.HistoryEntry{Time: now.Add(-time.Minute), Controller: "deployment", Outcome: reconcile.OutcomeChanged, TraceID: "t1", DurationMS: 3}
	requeued := done
	requeued.Outcome, requeued.RequeueAfter = reconcile.OutcomeRequeue, "10m0s"
	inProgress := reconcile.HistoryEntry{Time: now.Add(-5 * time.Second), Controller: "deployment", Outcome: reconcile.OutcomeInProgress, Worker: "ctl-2", Attempt: 3, TraceID: "t2"}
	cases := []struct {
		name  string
		parts explain.LoopParts
		state string
		check func(l explain.Loop) bool
	}{
		{"never reconciled", explain.LoopParts{}, explain.StateIdle, func(l explain.Loop) bool { return l.Last == nil }},
		{"idle since its last reconcile", explain.LoopParts{History: []reconcile.HistoryEntry{done}}, explain.StateIdle,
			func(l explain.Loop) bool {
				return l.Last != nil && l.Last.Outcome == reconcile.OutcomeChanged && l.TraceID == "t1"
			}},
		{"queued", explain.LoopParts{History: []reconcile.HistoryEntry{done}, Queued: &bus.QueueEntry{Since: now.Add(-2 * time.Second)}}, explain.StateQueued,
			func(l explain.Loop) bool { return l.Since.Equal(now.Add(-2 * time.Second)) }},
		{"delivered", explain.LoopParts{Queued: &bus.QueueEntry{Since: now.Add(-2 * time.Second), Delivered: true}}, explain.StateInFlight,
			func(l explain.Loop) bool { return l.Worker == "" }},
		{"in progress on a worker", explain.LoopParts{History: []reconcile.HistoryEntry{done, inProgress}, Queued: &bus.QueueEntry{Delivered: true}}, explain.StateInFlight,
			func(l explain.Loop) bool {
				return l.Worker == "ctl-2" && l.Attempt == 3 && l.Last.TraceID == "t1" && l.TraceID == "t2"
			}},
		{"requeued", explain.LoopParts{History: []reconcile.HistoryEntry{requeued}, Queued: &bus.QueueEntry{Since: now.Add(-time.Minute), Delivered: true}}, explain.StateRequeued,
			func(l explain.Loop) bool { return l.NextRetry != nil && l.NextRetry.After(now.Add(8*time.Minute)) }},
		{"backing off", explain.LoopParts{Retry: &reconcile.RetryRecord{Attempts: 4, LastError: "boom", NextRetry: at(time.Second), TraceID: "t3"},
			Queued: &bus.QueueEntry{Delivered: true}}, explain.StateBackingOff,
			func(l explain.Loop) bool { return l.Attempt == 4 && l.LastError == "boom" && l.TraceID == "t3" }},
		{"retry due: with a worker again", explain.LoopParts{Retry: &reconcile.RetryRecord{Attempts: 4, NextRetry: at(-time.Second)},
			Queued: &bus.QueueEntry{Since: now.Add(-time.Minute), Delivered: true}}, explain.StateInFlight,
			func(l explain.Loop) bool { return l.Since.Equal(now.Add(-time.Second)) }},
		{"failed for good", explain.LoopParts{Retry: &reconcile.RetryRecord{Attempts: 1, LastError: "invalid", Terminal: true}}, explain.StateFailed,
			func(l explain.Loop) bool { return l.LastError == "invalid" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := explain.StateOf(c.parts, now)
			if l.State != c.state || !c.check(l) {
				t.Fatalf("%+v", l)
			}
		})
	}
}

// TestPodLoop: a pod's loop is the scheduler's or its node's agent's.
func TestPodLoop(t *testing.T) {
	unsched := pod(t, 0, "", "", `"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/1 nodes are available: 1 Too many pods.","lastTransitionTime":"2026-11-25T11:59:00Z"}]`)
	in := scenario(t, deployment(t, 1, 0, ""), unsched)
	in.Events = map[string][]kinds.Event{"p0": {{Reason: "FailedScheduling", Type: "Warning", Count: 7, Message: "0/1 nodes are available: 1 Too many pods."}}}
	e := explain.Explain(in)
	var l *explain.Loop
	for i := range e.Loops {
		if e.Loops[i].Controller == "scheduler" {
			l = &e.Loops[i]
		}
	}
	if l == nil || l.Attempt != 7 || l.Since == nil || l.Object.Name != "web-7d9f-0" {
		t.Fatalf("the scheduler's loop: %+v", e.Loops)
	}
}
