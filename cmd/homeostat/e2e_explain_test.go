package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/explain"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

// explainScenarios are broken objects, each with the root cause explain
// must name for it.
const explainScenarios = `apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 2
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      containers:
      - {name: web, command: [sleep, "3600"], resources: {requests: {cpu: "100"}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: crash}
spec:
  replicas: 2
  selector: {matchLabels: {app: crash}}
  template:
    metadata: {labels: {app: crash}}
    spec:
      containers:
      - {name: web, command: [sh, -c, 'echo "boom $HOMEOSTAT_RESTARTS"; exit 3']}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cfg}
spec:
  replicas: 1
  selector: {matchLabels: {app: cfg}}
  template:
    metadata: {labels: {app: cfg}}
    spec:
      containers:
      - name: web
        command: [sleep, "3600"]
        env: [{name: GREETING, valueFrom: {configMapKeyRef: {name: absent, key: greeting}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: sec}
spec:
  containers:
  - {name: web, command: [sleep, "3600"], envFrom: [{secretRef: {name: hidden}}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: probe}
spec:
  replicas: 1
  progressDeadlineSeconds: 3
  selector: {matchLabels: {app: probe}}
  template:
    metadata: {labels: {app: probe}}
    spec:
      containers:
      - name: web
        command: [sleep, "3600"]
        readinessProbe: {exec: {command: ["false"]}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: nocmd}
spec:
  containers:
  - {name: web, command: [homeostat-no-such-program]}
---
apiVersion: v1
kind: Node
metadata: {name: ghost}
---
apiVersion: v1
kind: Pod
metadata: {name: stranded}
spec:
  nodeName: ghost
  containers:
  - {name: web, command: [sleep, "3600"]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ok}
spec:
  replicas: 1
  selector: {matchLabels: {app: ok}}
  template:
    metadata: {labels: {app: ok}}
    spec:
      containers:
      - {name: web, command: [sleep, "3600"]}
`

// explainOf reads an object's explanation through the CLI's JSON.
func explainOf(t *testing.T, s *server, object string) *explain.Explanation {
	t.Helper()
	out, _, err := s.run("", "explain", object, "-o", "json")
	if err != nil {
		return nil
	}
	var e explain.Explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("explain -o json: %v\n%s", err, out)
	}
	return &e
}

// TestExplainNamesTheRootCause: for each broken object, explain (through
// the CLI's text, its JSON and the API's subresource) names the root
// cause and its fix; a healthy one answers in one line; history shows
// what the controllers did.
func TestExplainNamesTheRootCause(t *testing.T) {
	s := startUp(t, t.TempDir(), "--capacity", "cpu=4,memory=8Gi,pods=110")
	s.must(explainScenarios, "apply", "-f", "-")
	// A paused Deployment with a change it does not roll out, and one
	// whose deletion a finalizer holds.
	s.must("", "rollout", "pause", "deployment/ok")
	s.must(strings.Replace(strings.Split(explainScenarios, "---\n")[8], "metadata: {name: ok}", "metadata: {name: held, finalizers: [example.com/hold]}", 1),
		"apply", "-f", "-")
	cases := []struct {
		object, reason string
		// what the root cause's message, the fix and the text must hold
		message, fix, text string
	}{
		{"deployment/big", "Unschedulable", "Insufficient cpu", "no node has 100 cpu free: add a node or lower spec.template.spec.containers[web].resources.requests.cpu", "2 Pods"},
		{"deployment/crash", "CrashLoopBackOff", "exited with exit code 3", "homeostat logs crash-", "boom"},
		{"deployment/cfg", "CreateContainerConfigError", `configmap "absent" not found`, "create configmap absent in namespace default", "agent of node"},
		{"pod/sec", "CreateContainerConfigError", `secret "hidden" not found`, "create secret hidden", ""},
		{"deployment/probe", "ReadinessProbeFailed", "Readiness probe failed: exit status 1", "spec.template.spec.containers[web].readinessProbe", "ProgressDeadlineExceeded"},
		{"pod/nocmd", "StartError", "homeostat-no-such-program", "fix spec.containers[web].command", ""},
		{"pod/stranded", "NodeNotReady", "node ghost is not ready", "bring back the agent of node ghost", "Node ghost"},
	}
	for _, c := range cases {
		var e *explain.Explanation
		poll.Until(t, c.object+"'s root cause "+c.reason, 90*time.Second, func() bool {
			e = explainOf(t, s, c.object)
			return e != nil && e.RootCause != nil && e.RootCause.Reason == c.reason
		})
		if !strings.Contains(e.RootCause.Message, c.message) || !strings.Contains(e.RootCause.Fix, c.fix) {
			t.Errorf("%s: root cause %+v", c.object, e.RootCause)
		}
		// Which of several failing pods is the root cause can change between
		// two reads (a crashing pod is Running between its crashes), so the
		// text is held to a JSON read made with it.
		var out string
		poll.Until(t, c.object+"'s text, with the fix of a read made with it", 30*time.Second, func() bool {
			out = s.must("", "explain", c.object)
			now := explainOf(t, s, c.object)
			return strings.Contains(out, "Root cause: ") && strings.Contains(out, c.text) &&
				now != nil && now.RootCause != nil && strings.Contains(out, "Fix: "+now.RootCause.Fix)
		})
		if !strings.Contains(out, "not converged") {
			t.Errorf("homeostat explain %s:\n%s", c.object, out)
		}
	}
	// The deadline of the probe's rollout is named beside its cause.
	if e := explainOf(t, s, "deployment/probe"); !hasCause(e, "ProgressDeadlineExceeded") {
		t.Errorf("deployment/probe's causes: %+v", e.Causes)
	}

	// Paused, with a change: the pause is the cause.
	s.must(strings.Replace(strings.Split(explainScenarios, "---\n")[8], `"3600"`, `"3601"`, 1), "apply", "-f", "-")
	poll.Until(t, "the paused Deployment's cause", 30*time.Second, func() bool {
		e := explainOf(t, s, "deployment/ok")
		return e != nil && e.RootCause != nil && e.RootCause.Reason == "Paused" && strings.Contains(e.RootCause.Fix, "rollout resume deployment/ok")
	})
	s.must("", "delete", "deployment", "held")
	poll.Until(t, "the held deletion's cause", 30*time.Second, func() bool {
		e := explainOf(t, s, "deployment/held")
		return e != nil && e.RootCause != nil && e.RootCause.Reason == "DeletionBlocked" && strings.Contains(e.RootCause.Message, "example.com/hold")
	})

	// Healthy: one line.
	s.must("", "rollout", "resume", "deployment/ok")
	poll.Until(t, "deployment/ok healthy, in one line", 60*time.Second, func() bool {
		out, _, err := s.run("", "explain", "deployment/ok")
		return err == nil && out == "Deployment default/ok is healthy (1/1 ready)\n"
	})

	// The API answers the subresource itself, and 404 for a missing object.
	resp, err := s.http.Get(s.url + "/apis/apps/v1/namespaces/default/deployments/big/explain")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e explain.Explanation
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &e) != nil || e.Kind != "Explanation" || e.RootCause == nil {
		t.Fatalf("GET .../deployments/big/explain: %d %s", resp.StatusCode, body)
	}
	if out := s.must("", "explain", "namespace/default"); out != "Namespace default is healthy (Active)\n" {
		t.Fatalf("explain namespace/default: %q", out)
	}
	if _, errOut, err := s.run("", "explain", "deployment/nope"); err == nil || !strings.Contains(errOut, "not found") {
		t.Fatalf("explain of a missing Deployment: %v %s", err, errOut)
	}

	// The history says what the controllers did, filtered as asked.
	out := s.must("", "history", "deployment/crash")
	if !strings.Contains(out, "created 1 replicasets.apps (crash-") || !strings.Contains(out, "deployment") {
		t.Fatalf("homeostat history deployment/crash:\n%s", out)
	}
	var h api.ReconcileHistory
	if err := json.Unmarshal([]byte(s.must("", "history", "deployment/crash", "--controller", "replicaset", "-o", "json")), &h); err != nil || len(h.Items) != 0 {
		t.Fatalf("the Deployment's history under the replicaset controller: %v %+v", err, h)
	}
}

func hasCause(e *explain.Explanation, reason string) bool {
	if e == nil {
		return false
	}
	for _, c := range e.Causes {
		if c.Reason == reason {
			return true
		}
	}
	return false
}

// TestExplainFollowsRBAC: explain and history need their subresources;
// a viewer of one namespace gets an answer without the nodes, which it
// may not read, and says so; an identity with no role gets 403.
func TestExplainFollowsRBAC(t *testing.T) {
	s := startUp(t, t.TempDir())
	s.must(`apiVersion: v1
kind: ServiceAccount
metadata: {name: viewer}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: nobody}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: viewer, namespace: default}]
---
`+strings.Split(explainScenarios, "---\n")[8], "apply", "-f", "-")
	viewer := strings.TrimSpace(s.must("", "token", "create", "viewer"))
	nobody := strings.TrimSpace(s.must("", "token", "create", "nobody"))
	poll.Until(t, "deployment/ok healthy", 60*time.Second, func() bool {
		e := explainOf(t, s, "deployment/ok")
		return e != nil && e.Health == explain.Healthy
	})
	var out, errOut string
	if !poll.Within(15*time.Second, func() bool {
		var err error
		out, errOut, err = s.run("", "explain", "deployment/ok", "-o", "json", "--token", viewer)
		return err == nil
	}) {
		t.Fatalf("the viewer's explain: %s", errOut)
	}
	var e explain.Explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Health != explain.Healthy || len(e.Hidden) != 1 || e.Hidden[0] != "nodes" {
		t.Fatalf("the viewer's explanation: %v %+v", err, e)
	}
	if _, errOut, err := s.run("", "history", "deployment/ok", "--token", viewer); err != nil {
		t.Fatalf("the viewer's history: %v %s", err, errOut)
	}
	for _, verb := range []string{"explain", "history"} {
		if _, errOut, err := s.run("", verb, "deployment/ok", "--token", nobody); err == nil || !strings.Contains(errOut, "forbidden") {
			t.Fatalf("%s without a role: %v %s", verb, err, errOut)
		}
	}
}
