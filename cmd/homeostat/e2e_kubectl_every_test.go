package main_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// TestKubectlDescribesEveryKind: with every example applied from its
// directory (kubectl apply -f DIR) and one object of each other kind made
// by kubectl's generators, kubectl describes an object of every resource
// the API lists, and the objects that have events show them; cluster-info,
// whoami and top answer.
func TestKubectlDescribesEveryKind(t *testing.T) {
	dir := t.TempDir()
	s := startUp(t, dir)
	k := newKubectl(t, s)
	k.must("Kubernetes control plane is running at "+s.url, "", "cluster-info")
	// As against Kubernetes, the instances of kinds defined in the same
	// apply are refused until their definitions are established.
	examples := filepath.Join("..", "..", "examples")
	if out, err := k.run("", "apply", "-f", examples); err == nil || !strings.Contains(out, "deployment.apps/demo created") || !strings.Contains(out, "ensure CRDs are installed first") {
		t.Fatalf("kubectl apply -f %s: %v\n%s", examples, err, out)
	}
	k.must("condition met", "", "wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "resourcedefinition/widgets.example.com", "--timeout=30s")
	k.must("crontab.stable.example.com/nightly created", "", "apply", "-f", examples)
	k.must("successfully rolled out", "", "rollout", "status", "deployment/demo", "--timeout=90s")
	k.must("condition met", "", "wait", "--for=condition=Complete", "job/count", "--timeout=90s")
	// A node's proxy listens on each Service's port: free ones, here.
	ports := freeTCPPorts(t, 2)
	webPort, demoPort := ports[0], ports[1]
	out := k.must("service/web created", "", "create", "service", "clusterip", "web", "--tcp="+webPort+":8080")
	if strings.Contains(out, "Warning") {
		t.Fatalf("a Service was stored with a warning:\n%s", out)
	}
	k.must("service/demo exposed", "", "expose", "deployment", "demo", "--port="+demoPort, "--target-port=http")
	k.must("serviceaccount/bot created", "", "create", "serviceaccount", "bot")
	k.must("hst_default_bot-", "", "create", "token", "bot")
	k.must("clusterrole.rbac.authorization.k8s.io/reader created", "", "create", "clusterrole", "reader", "--verb=get", "--resource=pods")
	k.must("clusterrolebinding.rbac.authorization.k8s.io/bot-reads created", "", "create", "clusterrolebinding", "bot-reads", "--clusterrole=reader", "--serviceaccount=default:bot")

	// The Service demo's endpoints are kept by a controller.
	poll.Until(t, "the demo Service's EndpointSlices", 30*time.Second, func() bool {
		out, err := k.run("", "get", "endpointslices", "-l", "kubernetes.io/service-name=demo", "-o", "name")
		return err == nil && strings.Contains(out, "endpointslice")
	})
	resources := strings.Fields(k.must("", "", "api-resources", "--verbs=list", "-o", "name"))
	if len(resources) < 20 {
		t.Fatalf("api-resources listed only %v", resources)
	}
	for _, res := range resources {
		items := strings.Fields(k.must("", "", "get", res, "-A", "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}`))
		if len(items) == 0 {
			t.Errorf("no %s to describe: make one above", res)
			continue
		}
		ns, name, _ := strings.Cut(items[0], "/")
		args := []string{"describe", res, name}
		if ns != "" {
			args = append(args, "-n", ns)
		}
		if out := k.must(name, "", args...); !regexp.MustCompile(`(?m)^Name:\s+` + regexp.QuoteMeta(name) + `$`).MatchString(out) {
			t.Errorf("kubectl describe %s %s:\n%s", res, name, out)
		}
	}

	// What has events shows them.
	withEvents := map[string]string{
		"node/" + nodeName(dir): `Normal\s+RegisteredNode\s+.*node-lifecycle-controller\s+Node \S+ event: Registered Node`,
		"deployment/demo":       `Normal\s+ScalingReplicaSet\s+.*deployment-controller\s+Created new replica set demo-`,
		"job/count":             `Normal\s+Completed\s+.*job-controller\s+Job completed`,
		"daemonset/node-demo":   `Normal\s+SuccessfulCreate\s+.*daemonset-controller\s+Created pod: node-demo-`,
		// A Service selecting nothing says so.
		"service/web": `Warning\s+NoPodsSelected\s+.*endpointslice-controller\s+the selector app=web selects no pod`,
	}
	for obj, want := range withEvents {
		kind, name, _ := strings.Cut(obj, "/")
		poll.Until(t, "the events of "+obj, 30*time.Second, func() bool {
			out, err := k.run("", "describe", kind, name)
			return err == nil && regexp.MustCompile(want).MatchString(out)
		})
	}
	pod := k.must("demo-", "", "get", "pods", "-l", "app=demo", "-o", "jsonpath={.items[0].metadata.name}")
	k.must("Successfully assigned default/"+pod+" to "+nodeName(dir), "", "describe", "pod", pod)

	k.must("system:masters", "", "auth", "whoami")
	if out, err := k.run("", "top", "nodes"); err == nil || !strings.Contains(out, "Metrics API not available") {
		t.Fatalf("kubectl top nodes: %v\n%s", err, out)
	}
}

// TestKubectlOutputsAndLogs: get's other output formats, a list read in
// pages, and kubectl logs with each way of choosing containers and
// following.
func TestKubectlOutputsAndLogs(t *testing.T) {
	s := startUp(t, t.TempDir())
	k := newKubectl(t, s)
	k.must("pod/two created", `apiVersion: v1
kind: Pod
metadata: {name: two, labels: {app: two}}
spec:
  containers:
  - name: ticker
    command: [sh, -c, 'i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done']
  - name: greeter
    command: [sh, -c, 'echo "hello from greeter"; sleep 3600']
`, "apply", "-f", "-")
	k.must("condition met", "", "wait", "--for=condition=Ready", "pod/two", "--timeout=60s")

	if out := k.must("", "", "get", "pod", "two", "-o", "custom-columns=NAME:.metadata.name,FIRST:.spec.containers[0].name"); !regexp.MustCompile(`(?m)^NAME\s+FIRST\ntwo\s+ticker$`).MatchString(strings.TrimSpace(out)) {
		t.Fatalf("kubectl get -o custom-columns:\n%s", out)
	}
	if out := k.must("", "", "get", "pod", "two", "-o", `go-template={{.metadata.name}} {{len .spec.containers}}`); out != "two 2" {
		t.Fatalf("kubectl get -o go-template: %q", out)
	}
	k.must("  name: greeter\n", "", "get", "pod", "two", "-o", "yaml")

	// A list read in pages of two: kubectl follows each continue token.
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		k.must("configmap/cm-"+n+" created", "", "create", "configmap", "cm-"+n, "--from-literal=k="+n)
	}
	out := k.must("", "", "get", "configmaps", "--chunk-size=2", "-o", "name", "-v=6")
	if c := strings.Count(out, "limit=2"); c < 3 || !strings.Contains(out, "continue=") {
		t.Fatalf("kubectl get --chunk-size=2 made %d requests:\n%s", c, out)
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if !strings.Contains(out, "configmap/cm-"+n+"\n") {
			t.Fatalf("the paged list lacks cm-%s:\n%s", n, out)
		}
	}

	poll.Until(t, "both containers' output", 30*time.Second, func() bool {
		out, err := k.run("", "logs", "two", "--all-containers")
		return err == nil && strings.Contains(out, "tick 1\n") && strings.Contains(out, "hello from greeter\n")
	})
	if out := k.must("hello from greeter", "", "logs", "two", "-c", "greeter"); strings.Contains(out, "tick") {
		t.Fatalf("kubectl logs -c greeter gave the ticker's lines:\n%s", out)
	}
	k.must("[pod/two/greeter] hello from greeter", "", "logs", "-l", "app=two", "-c", "greeter", "--prefix")
	followed(t, k)
}

// followed: kubectl logs -f goes on printing what the container writes
// after it started, until it is stopped.
func followed(t *testing.T, k *kubectlRunner) {
	t.Helper()
	last := regexp.MustCompile(`tick (\d+)\n$`).FindStringSubmatch(k.must("tick", "", "logs", "two", "-c", "ticker", "--tail=1"))
	if last == nil {
		t.Fatal("no tick to follow from")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, "logs", "-f", "two", "-c", "ticker", "--tail=1")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "HOME="+k.home)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	n, err := strconv.Atoi(last[1])
	if err != nil {
		t.Fatal(err)
	}
	// Ten lines after the last one read before following: only a follow
	// that goes on can print them.
	want := "tick " + strconv.Itoa(n+10) + "\n"
	poll.Until(t, "kubectl logs -f to print "+strings.TrimSpace(want), 30*time.Second, func() bool {
		return strings.Contains(out.String(), want)
	})
}

// freeTCPPort is a loopback port nothing listens on now.
func freeTCPPort(t *testing.T) string { return freeTCPPorts(t, 1)[0] }

// freeTCPPorts are n distinct loopback ports nothing listens on now: each
// is held until all are found, as a port let go may be handed out again.
func freeTCPPorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	return out
}
