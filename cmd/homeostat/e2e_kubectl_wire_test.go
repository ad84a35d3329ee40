package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv"
	"github.com/homeostat/homeostat/testenv/poll"
)

// kubectlRunner runs the built kubectl against an up, with the kubeconfig
// up wrote and nothing else: default flags, a HOME of its own (so its
// discovery cache starts empty).
type kubectlRunner struct {
	t          *testing.T
	bin, home  string
	kubeconfig string
	env        []string // more environment for the next commands
}

func newKubectl(t *testing.T, s *server) *kubectlRunner {
	return &kubectlRunner{t: t, bin: testenv.Kubectl(t), home: t.TempDir(), kubeconfig: s.kubeconfig}
}

// run runs kubectl with stdin, returning its combined output.
func (k *kubectlRunner) run(stdin string, args ...string) (string, error) {
	// No command may hang: a minute is far more than any takes.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "HOME="+k.home), k.env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs kubectl and fails the test unless it succeeds and prints want.
func (k *kubectlRunner) must(want, stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.run(stdin, args...)
	if err != nil || !strings.Contains(out, want) {
		k.t.Fatalf("kubectl %s: %v\n%s\n(want %q)", strings.Join(args, " "), err, out, want)
	}
	return out
}

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: IMAGE
        command: [sleep, "3600"]
        env: [{name: GREETING, value: hello}]
      - name: sidecar
        command: [sleep, "3600"]
`

func webManifest(replicas, image string) string {
	return strings.NewReplacer("REPLICAS", replicas, "IMAGE", image).Replace(webDeployment)
}

// TestKubectlEditsObjects: kubectl with default flags creates, configures,
// patches and edits objects in every way that ends in a PATCH: client-side
// apply (a three-way strategic merge from the OpenAPI v3 document),
// patch of each type, set image, label, annotate and rollout
// restart/pause/resume; and reads its version and explain.
func TestKubectlEditsObjects(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	k := newKubectl(t, s)
	k.must("Server Version: v1.34.0+homeostat", "", "version")
	out := k.must("customresourcedefinitions", "", "api-resources")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^configmaps\s+cm\s+v1\s+true\s+ConfigMap$`),
		regexp.MustCompile(`(?m)^deployments\s+deploy\s+apps/v1\s+true\s+Deployment$`),
		regexp.MustCompile(`(?m)^events\s+ev\s+events.k8s.io/v1\s+true\s+Event$`),
	} {
		if !want.MatchString(out) {
			t.Fatalf("kubectl api-resources lacks %s:\n%s", want, out)
		}
	}
	k.must("deployment.apps/web created", webManifest("2", "v1"), "apply", "-f", "-")
	k.must("deployment.apps/web configured", webManifest("3", "v1"), "apply", "-f", "-")
	k.must("deployment.apps/web unchanged", webManifest("3", "v1"), "apply", "-f", "-")
	jsonpath := func(path string) string {
		return k.must("", "", "get", "deployment", "web", "-o", "jsonpath="+path)
	}
	if got := jsonpath("{.spec.replicas}"); got != "3" {
		t.Fatalf("replicas after apply: %q", got)
	}
	k.must("deployment.apps/web patched", "", "patch", "deployment", "web", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"v2"}]}}}}`)
	if got := jsonpath("{.spec.template.spec.containers[*].name} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[0].value}"); got != "web sidecar v2 hello" {
		t.Fatalf("after a strategic merge patch of one container: %q", got)
	}
	k.must("deployment.apps/web patched", "", "patch", "deployment", "web", "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":4}]`)
	if got := jsonpath("{.spec.replicas}"); got != "4" {
		t.Fatalf("replicas after a JSON patch: %q", got)
	}
	k.must("deployment.apps/web patched", "", "patch", "deployment", "web", "--type=merge", "-p", `{"metadata":{"labels":{"tier":"front"}}}`)
	k.must("deployment.apps/web image updated", "", "set", "image", "deployment/web", "web=v3")
	k.must("deployment.apps/web labeled", "", "label", "deployment", "web", "owner=alice")
	k.must("deployment.apps/web annotated", "", "annotate", "deployment", "web", "note=kept")
	k.must("deployment.apps/web restarted", "", "rollout", "restart", "deployment/web")
	k.must("deployment.apps/web paused", "", "rollout", "pause", "deployment/web")
	if got := jsonpath("{.spec.paused}"); got != "true" {
		t.Fatalf("paused after rollout pause: %q", got)
	}
	k.must("deployment.apps/web resumed", "", "rollout", "resume", "deployment/web")
	if got := jsonpath("{.spec.paused}"); got == "true" {
		t.Fatalf("paused after rollout resume: %q", got)
	}
	k.must("deployment.apps/web scaled", "", "scale", "deployment", "web", "--replicas=6")
	if got := jsonpath("{.spec.replicas}"); got != "6" {
		t.Fatalf("replicas after kubectl scale: %q", got)
	}
	k.must("deployment.apps/web scaled", "", "scale", "deployment", "web", "--replicas=4", "--current-replicas=6")
	got := jsonpath(`{.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.labels.tier} {.metadata.labels.owner} {.metadata.annotations.note} {.spec.template.spec.containers[1].name}`)
	if got != "4 v3 front alice kept sidecar" {
		t.Fatalf("after the patches: %q", got)
	}
	if jsonpath(`{.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}`) == "" {
		t.Fatal("rollout restart left no restartedAt annotation on the template")
	}
	// A client-side apply after the edits keeps what the manifest does not
	// own (the label set by hand) and puts back what it does.
	k.must("deployment.apps/web configured", webManifest("2", "v1"), "apply", "-f", "-")
	if got := jsonpath(`{.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.labels.owner}`); got != "2 v1 alice" {
		t.Fatalf("after apply over the edits: %q", got)
	}
	k.must("number of pods desired", "", "explain", "deployment.spec.replicas")
	k.must("FIELD: containers <[]Container>", "", "explain", "pods.spec.containers")
	// diff exits 1 when there is a difference, and its server-side dry
	// run changes nothing.
	out, err := k.run(webManifest("5", "v1"), "diff", "-f", "-")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "-  replicas: 2") || !strings.Contains(out, "+  replicas: 5") {
		t.Fatalf("kubectl diff: %v\n%s", err, out)
	}
	if got := jsonpath("{.spec.replicas}"); got != "2" {
		t.Fatalf("replicas after diff: %q", got)
	}
	k.must("", webManifest("2", "v1"), "diff", "-f", "-")
}

// TestKubectlRolloutHistoryAndUndo: kubectl reads a Deployment's revisions
// from its ReplicaSets and rolls back to the one before.
func TestKubectlRolloutHistoryAndUndo(t *testing.T) {
	// At debug, the log printed on a failure says what each pass did.
	s := startUp(t, t.TempDir(), "--no-agent", "--log-level", "debug")
	k := newKubectl(t, s)
	k.must("created", webManifest("1", "v1"), "apply", "-f", "-")
	// The first template's ReplicaSet, before the template changes: a
	// controller that first sees the Deployment after the change makes
	// only the second's (as it may, level-triggered), and the history
	// would hold one revision.
	poll.Until(t, "the first revision in the history", 30*time.Second, func() bool {
		out, err := k.run("", "rollout", "history", "deployment/web")
		return err == nil && strings.Contains(out, "\n1 ")
	})
	k.must("annotated", "", "annotate", "deployment", "web", "kubernetes.io/change-cause=image v2")
	k.must("image updated", "", "set", "image", "deployment/web", "web=v2")
	var history string
	if !poll.Within(30*time.Second, func() bool {
		out, err := k.run("", "rollout", "history", "deployment/web")
		history = fmt.Sprintf("%s (%v)", out, err)
		return err == nil && strings.Contains(out, "\n1 ") && strings.Contains(out, "\n2         image v2")
	}) {
		rs, _ := k.run("", "get", "replicasets", "-o", "yaml")
		t.Fatalf("timed out after 30s waiting for two revisions in the history; the last:\n%s\nthe ReplicaSets:\n%s", history, rs)
	}
	k.must("rolled back", "", "rollout", "undo", "deployment/web")
	image := k.must("", "", "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	if image != "v1" {
		t.Fatalf("image after undo: %q", image)
	}
	poll.Until(t, "the rolled back template as revision 3", 30*time.Second, func() bool {
		out, err := k.run("", "rollout", "history", "deployment/web", "--revision", "3")
		return err == nil && strings.Contains(out, "Image:\tv1")
	})
	k.must("rolled back", "", "rollout", "undo", "deployment/web", "--to-revision", "2")
	image = k.must("", "", "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	if image != "v2" {
		t.Fatalf("image after undo to revision 2: %q", image)
	}
}

// TestKubectlGetPrintsServerTables: kubectl get prints the columns the API's
// Tables give each kind, wide ones with -o wide, a namespace column with
// -A, workloads under get all, and rows as they change with -w.
func TestKubectlGetPrintsServerTables(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	k := newKubectl(t, s)
	k.must("created", webManifest("2", "v1"), "apply", "-f", "-")
	header := regexp.MustCompile(`(?m)^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\nweb\s+\d/2\s+\d+\s+\d+\s+\d+s$`)
	if out := k.must("web", "", "get", "deployments"); !header.MatchString(out) {
		t.Fatalf("kubectl get deployments:\n%s", out)
	}
	wide := regexp.MustCompile(`(?m)^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR\nweb\s+.*\s+web,sidecar\s+v1,\s+app=web$`)
	if out := k.must("web", "", "get", "deployments", "-o", "wide"); !wide.MatchString(out) {
		t.Fatalf("kubectl get deployments -o wide:\n%s", out)
	}
	all := regexp.MustCompile(`(?m)^NAMESPACE\s+NAME\s+READY`)
	if out := k.must("deployment.apps/web", "", "get", "all", "-A"); !all.MatchString(out) {
		t.Fatalf("kubectl get all -A:\n%s", out)
	}
	if out := k.must("default", "", "get", "namespaces"); !regexp.MustCompile(`(?m)^default\s+Active\s+\d+s$`).MatchString(out) {
		t.Fatalf("kubectl get namespaces:\n%s", out)
	}
	k.must("web", "", "get", "deployments", "-l", "app=web", "--chunk-size=1")

	cmd := exec.Command(k.bin, "get", "deployment", "web", "-w", "--output-watch-events")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "HOME="+k.home)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	poll.Until(t, "the watch's first row", 20*time.Second, func() bool { return strings.Contains(out.String(), "ADDED") })
	k.must("scaled", "", "scale", "deployment", "web", "--replicas=3")
	poll.Until(t, "a MODIFIED row with 3 replicas", 20*time.Second, func() bool {
		return regexp.MustCompile(`MODIFIED\s+web\s+\d/3`).MatchString(out.String())
	})
}

// TestKubectlDescribeShowsEvents: Events carry their fields at the top
// level as in core/v1, so kubectl describe finds an object's events by
// field selector, and kubectl events and get events print them.
func TestKubectlDescribeShowsEvents(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	k := newKubectl(t, s)
	k.must("created", webManifest("2", "v1"), "apply", "-f", "-")
	scaled := regexp.MustCompile(`Normal\s+ScalingReplicaSet\s+\S+\s+deployment-controller\s+Created new replica set web-`)
	poll.Until(t, "describe to show the ScalingReplicaSet event", 30*time.Second, func() bool {
		out, err := k.run("", "describe", "deployment", "web")
		return err == nil && scaled.MatchString(out) && strings.Contains(out, "NewReplicaSet:")
	})
	k.must("ScalingReplicaSet", "", "events", "--for", "deployment/web")
	out := k.must("deployment/web", "", "get", "events")
	if !regexp.MustCompile(`(?m)^\S+\s+Normal\s+ScalingReplicaSet\s+deployment/web\s+Created new replica set`).MatchString(out) {
		t.Fatalf("kubectl get events:\n%s", out)
	}
}

// TestKubectlCreateGenerators: kubectl's typed generators send protobuf,
// which the API reads through Kubernetes' own types.
func TestKubectlCreateGenerators(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	k := newKubectl(t, s)
	k.must("namespace/team created", "", "create", "namespace", "team")
	k.must("deployment.apps/web created", "", "create", "deployment", "web", "-n", "team", "--image=nginx", "--replicas=2", "--", "sleep", "3600")
	got := k.must("", "", "get", "deployment", "web", "-n", "team", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].command}")
	if got != `2 ["sleep","3600"]` {
		t.Fatalf("the created deployment: %q", got)
	}
	k.must("job.batch/once created", "", "create", "job", "once", "-n", "team", "--image=busybox", "--", "true")
	k.must("serviceaccount/bot created", "", "create", "serviceaccount", "bot", "-n", "team")
	k.must("role.rbac.authorization.k8s.io/reader created", "", "create", "role", "reader", "-n", "team", "--verb=get,list", "--resource=pods")
	k.must("rolebinding.rbac.authorization.k8s.io/bot-reads created", "", "create", "rolebinding", "bot-reads", "-n", "team", "--role=reader", "--serviceaccount=team:bot")
	k.must("yes", "", "auth", "can-i", "list", "pods", "-n", "team", "--as=system:serviceaccount:team:bot")
	// A pod as kubectl run makes it: dnsPolicy and the like are accepted,
	// and kubectl shows the warning that names them.
	out := k.must("pod/p created", "", "run", "p", "-n", "team", "--image=busybox", "--restart=Never", "--command", "--", "sleep", "3600")
	if !strings.Contains(out, "Warning: spec.dnsPolicy: Homeostat does not act on this field") {
		t.Fatalf("kubectl run gave no warning for dnsPolicy:\n%s", out)
	}
	// What Homeostat has not built fails at once with the reason (the pod
	// is marked Running, as port-forward asks, since no agent runs here).
	k.must("pod/p patched", "", "patch", "pod", "p", "-n", "team", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Running"}}`)
	for _, args := range [][]string{
		{"exec", "p", "-n", "team", "--", "ls"},
		{"attach", "p", "-n", "team"},
		{"cp", "team/p:/etc/hosts", filepath.Join(t.TempDir(), "hosts")},
		{"top", "pods", "-n", "team"},
	} {
		out, err := k.run("", args...)
		if err == nil || !strings.Contains(out, "not supported by Homeostat") && !strings.Contains(out, "Metrics API not available") {
			t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Port forwarding is (TestPortForwardThroughTheAPI), to a pod whose
	// node has said where it runs.
	if out, err := k.run("", "port-forward", "pod/p", "-n", "team", "0:80"); err == nil || !strings.Contains(out, `pod "p" has no address yet`) {
		t.Errorf("kubectl port-forward to a pod without an address: %v\n%s", err, out)
	}
	// A client-side dry run's output is taken back as it is.
	manifest := k.must("kind: Deployment", "", "create", "deployment", "dry", "-n", "team", "--image=x", "--dry-run=client", "-o", "yaml", "--", "sleep", "1")
	k.must("deployment.apps/dry created", manifest, "create", "-f", "-")
}

// TestKubectlEditReplaceWaitDelete: the rest of the everyday commands:
// set env, edit (through an editor that rewrites the file), replace, wait
// on a jsonpath and on deletion, get's other outputs and field selectors,
// and delete's cascade modes.
func TestKubectlEditReplaceWaitDelete(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	k := newKubectl(t, s)
	k.must("created", webManifest("2", "v1"), "apply", "-f", "-")
	k.must("env updated", "", "set", "env", "deployment/web", "-c", "web", "MODE=fast")
	jsonpath := func(path string) string { return k.must("", "", "get", "deployment", "web", "-o", "jsonpath="+path) }
	if got := jsonpath(`{.spec.template.spec.containers[0].env[?(@.name=="MODE")].value}`); got != "fast" {
		t.Fatalf("env after set env: %q", got)
	}
	// kubectl edit runs $EDITOR on a temporary file.
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/replicas: 2/replicas: 7/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	k.env = []string{"KUBE_EDITOR=" + editor}
	k.must("deployment.apps/web edited", "", "edit", "deployment", "web")
	k.env = nil
	if got := jsonpath("{.spec.replicas}"); got != "7" {
		t.Fatalf("replicas after edit: %q", got)
	}
	// kubectl replace reads the object's resourceVersion and writes on it,
	// so a status write by the Deployment controller in between is a 409,
	// as in Kubernetes; a user runs it again.
	poll.Until(t, "kubectl replace", 30*time.Second, func() bool {
		out, err := k.run(webManifest("1", "v9"), "replace", "-f", "-")
		if err != nil && strings.Contains(out, "(Conflict)") {
			return false
		}
		if err != nil || !strings.Contains(out, "deployment.apps/web replaced") {
			t.Fatalf("kubectl replace -f -: %v\n%s", err, out)
		}
		return true
	})
	if got := jsonpath("{.spec.replicas} {.spec.template.spec.containers[0].image}"); got != "1 v9" {
		t.Fatalf("after replace: %q", got)
	}
	k.must("condition met", "", "wait", "--for=jsonpath={.spec.replicas}=1", "deployment/web", "--timeout=30s")
	k.must("deployment.apps/web", "", "get", "deployment", "-o", "name")
	k.must(`"kind": "Deployment"`, "", "get", "deployment", "web", "-o", "json")
	k.must("web", "", "get", "deployments", "--field-selector", "metadata.name=web")
	if out, err := k.run("", "get", "deployments", "--field-selector", "spec.replicas=1"); err == nil || !strings.Contains(out, "field label not supported") {
		t.Fatalf("an unknown field selector: %v\n%s", err, out)
	}
	// Orphan leaves the ReplicaSet; foreground waits for it to go.
	poll.Until(t, "the deployment's replicaset", 30*time.Second, func() bool {
		out, err := k.run("", "get", "replicasets", "-l", "app=web", "-o", "name")
		return err == nil && strings.Contains(out, "replicaset.apps/web-")
	})
	k.must(`deployment.apps "web" deleted`, "", "delete", "deployment", "web", "--cascade=orphan")
	k.must("replicaset.apps/web-", "", "get", "replicasets", "-l", "app=web", "-o", "name")
	k.must("created", webManifest("1", "v1"), "apply", "-f", "-")
	uid := jsonpath("{.metadata.uid}")
	owned := func() string {
		return k.must("", "", "get", "replicasets", "-o", `jsonpath={range .items[?(@.metadata.ownerReferences[0].uid=="`+uid+`")]}{.metadata.name}{end}`)
	}
	poll.Until(t, "the new deployment's replicaset", 30*time.Second, func() bool { return owned() != "" })
	k.must(`deployment.apps "web" deleted`, "", "delete", "deployment", "web", "--cascade=foreground", "--wait=true")
	if rs := owned(); rs != "" {
		t.Fatalf("a foreground deletion ended with its replicaset %s still there", rs)
	}
	// The default cascade, background, removes the dependents after.
	k.must("created", webManifest("1", "v1"), "apply", "-f", "-")
	uid = jsonpath("{.metadata.uid}")
	poll.Until(t, "the third deployment's replicaset", 30*time.Second, func() bool { return owned() != "" })
	k.must(`deployment.apps "web" deleted`, "", "delete", "deployment", "web", "--cascade=background")
	k.must("", "", "wait", "--for=delete", "deployment/web", "--timeout=30s")
	poll.Until(t, "the replicaset to follow its deployment", 30*time.Second, func() bool { return owned() == "" })
}

// TestKubectlServerSideApply: kubectl apply --server-side creates and
// configures, conflicts with a field another manager set (naming it), and
// takes it with --force-conflicts.
func TestKubectlServerSideApply(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	k := newKubectl(t, s)
	k.must("deployment.apps/web serverside-applied", webManifest("2", "v1"), "apply", "--server-side", "-f", "-")
	k.must("deployment.apps/web patched", "", "patch", "deployment", "web", "-p", `{"spec":{"replicas":4}}`)
	out, err := k.run(webManifest("2", "v2"), "apply", "--server-side", "-f", "-")
	if err == nil || !strings.Contains(out, `conflict with "kubectl-patch"`) || !strings.Contains(out, ".spec.replicas") {
		t.Fatalf("an apply over another manager's field: %v\n%s", err, out)
	}
	k.must("deployment.apps/web serverside-applied", webManifest("2", "v2"), "apply", "--server-side", "--force-conflicts", "-f", "-")
	got := k.must("", "", "get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}")
	if got != "2 v2" {
		t.Fatalf("after the forced apply: %q", got)
	}
	k.must("manager: kubectl", "", "get", "deployment", "web", "-o", "yaml", "--show-managed-fields")
	// A scale is recorded too: the next apply of other replicas conflicts.
	k.must("deployment.apps/web scaled", "", "scale", "deployment", "web", "--replicas=3")
	out, err = k.run(webManifest("2", "v2"), "apply", "--server-side", "-f", "-")
	if err == nil || !strings.Contains(out, "conflict with \"kubectl\"") || !strings.Contains(out, ".spec.replicas") {
		t.Fatalf("an apply over a scale: %v\n%s", err, out)
	}
}

// TestKubectlDescribeNode: describe node shows the node's Lease in
// kube-node-lease, renewed by its agent, and its Ready condition with a
// heartbeat time, as a kubelet's node reads.
func TestKubectlDescribeNode(t *testing.T) {
	dir := t.TempDir()
	s := startUp(t, dir)
	k := newKubectl(t, s)
	node := nodeName(dir)
	poll.Until(t, "the node's Lease", 30*time.Second, func() bool {
		out, err := k.run("", "get", "lease", node, "-n", "kube-node-lease", "-o", "jsonpath={.spec.holderIdentity} {.spec.renewTime}")
		return err == nil && strings.HasPrefix(out, node+" 20")
	})
	out := k.must("HolderIdentity:  "+node, "", "describe", "node", node)
	heartbeat := regexp.MustCompile(`(?m)^\s+Ready\s+True\s+\w{3}, \d\d \w{3} 20\d\d`)
	if !heartbeat.MatchString(out) || strings.Contains(out, "Failed to get lease") || strings.Contains(out, "0001") {
		t.Fatalf("kubectl describe node:\n%s", out)
	}
}

// stamped is a log line with its time, as kubectl logs --timestamps shows it.
var stamped = regexp.MustCompile(`(?m)^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z) `)

// TestKubectlLogsTimestampsAndSince: each line of a container's output has
// the time it was written, shown with --timestamps and filtered by --since
// and --since-time, and left out otherwise.
func TestKubectlLogsTimestampsAndSince(t *testing.T) {
	s := startUp(t, t.TempDir(), "--restart-backoff", "200ms")
	k := newKubectl(t, s)
	k.must("pod/counter created", `apiVersion: v1
kind: Pod
metadata: {name: counter}
spec:
  containers:
  - name: c
    command: [sh, -c, 'i=0; while true; do i=$((i+1)); echo "line $i"; sleep 0.2; done']
`, "apply", "-f", "-")
	var first time.Time
	poll.Until(t, "three stamped lines", 60*time.Second, func() bool {
		out, err := k.run("", "logs", "counter", "--timestamps")
		m := stamped.FindAllStringSubmatch(out, -1)
		if err != nil || len(m) < 3 || !strings.Contains(out, "Z line 1\n") {
			return false
		}
		first, err = time.Parse(time.RFC3339Nano, m[0][1])
		return err == nil
	})
	since := first.Truncate(time.Second).Add(time.Second)
	var out string
	poll.Until(t, "lines since the second after the first", 30*time.Second, func() bool {
		var err error
		out, err = k.run("", "logs", "counter", "--timestamps", "--since-time="+since.Format(time.RFC3339))
		return err == nil && stamped.MatchString(out)
	})
	for _, m := range stamped.FindAllStringSubmatch(out, -1) {
		if ts, err := time.Parse(time.RFC3339Nano, m[1]); err != nil || ts.Before(since) {
			t.Fatalf("--since-time=%s gave a line of %s:\n%s", since.Format(time.RFC3339), m[1], out)
		}
	}
	if strings.Contains(out, " line 1\n") {
		t.Fatalf("--since-time kept the first line:\n%s", out)
	}
	k.must("line 1\n", "", "logs", "counter", "--since=1h")
	// A container that has restarted has a previous log.
	k.must("pod/crasher created", `apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - name: c
    command: [sh, -c, 'echo "run at $(date +%s%N)"; sleep 0.3; exit 1']
`, "apply", "-f", "-")
	// Each run says when it ran, so the previous run's log is not the
	// current one's.
	poll.Until(t, "a previous log", 60*time.Second, func() bool {
		prev, err := k.run("", "logs", "crasher", "--previous")
		if err != nil || !strings.HasPrefix(prev, "run at ") {
			return false
		}
		cur, err := k.run("", "logs", "crasher")
		return err == nil && strings.HasPrefix(cur, "run at ") && cur != prev
	})
	plain := k.must("line", "", "logs", "counter", "--tail=2")
	if !regexp.MustCompile(`^line \d+\nline \d+\n$`).MatchString(plain) {
		t.Fatalf("kubectl logs --tail=2 without --timestamps:\n%q", plain)
	}
}

// TestKubectlControllersOwnTheirFields: what the controllers and the node
// agent write is recorded under managers of their own, as
// kube-controller-manager's and the kubelet's writes are; an apply of a
// field the controllers set conflicts, naming them.
func TestKubectlControllersOwnTheirFields(t *testing.T) {
	s := startUp(t, t.TempDir())
	k := newKubectl(t, s)
	k.must("deployment.apps/web serverside-applied", webManifest("1", "v1"), "apply", "--server-side", "-f", "-")
	k.must("successfully rolled out", "", "rollout", "status", "deployment/web", "--timeout=60s")
	managers := func(args ...string) string {
		return k.must("", "", append([]string{"get", "-o", `jsonpath={range .items[*].metadata.managedFields[*]}{.manager}/{.operation}/{.subresource} {end}`, "--show-managed-fields"}, args...)...)
	}
	for _, c := range []struct {
		what string
		args []string
		want []string
	}{
		{"the Deployment", []string{"deployments"}, []string{"kubectl/Apply/ ", "homeostat-controllers/Update/status "}},
		{"its ReplicaSet", []string{"replicasets", "-l", "app=web"}, []string{"homeostat-controllers/Update/ ", "homeostat-controllers/Update/status "}},
		{"its pod", []string{"pods", "-l", "app=web"}, []string{"homeostat-controllers/Update/ "}},
		{"the node", []string{"nodes"}, []string{"homeostat-agent/Update/"}},
	} {
		got := managers(c.args...)
		for _, want := range c.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s's managers are %q, without %q", c.what, got, want)
			}
		}
	}
	rs := k.must("web-", "", "get", "replicasets", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
	scaled := "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: " + rs + "}\nspec: {replicas: 5}\n"
	out, err := k.run(scaled, "apply", "--server-side", "-f", "-")
	if err == nil || !strings.Contains(out, `conflict with "homeostat-controllers"`) || !strings.Contains(out, ".spec.replicas") {
		t.Fatalf("an apply of a ReplicaSet's replicas, which its Deployment's controller sets: %v\n%s", err, out)
	}
}
