package main_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

const servedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: web
        command: [homeostat, demo, --listen, "127.0.0.1:$(PORT)", --message, v1]
        ports: [{name: http, containerPort: 0}]
        readinessProbe: {httpGet: {path: /readyz, port: http}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: SERVICE_PORT, targetPort: http}]
`

// load sends requests through a Service's proxy, each on a connection of
// its own, from a few clients at once, counting those that fail.
type load struct {
	url  string
	mu   sync.Mutex
	ok   int
	errs []string
	stop context.CancelFunc
	done sync.WaitGroup
}

func startLoad(url string, clients int) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{url: url, stop: cancel}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range clients {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for ctx.Err() == nil {
				err := getOK(ctx, c, url)
				if ctx.Err() != nil {
					return
				}
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, err.Error())
				} else {
					l.ok++
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func getOK(ctx context.Context, c *http.Client, url string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// take reads and resets the counts.
func (l *load) take() (ok int, errs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok, errs = l.ok, l.errs
	l.ok, l.errs = 0, nil
	return ok, errs
}

func (l *load) end() { l.stop(); l.done.Wait() }

// A Service reached through the node's proxy: its endpoints show in
// kubectl, pods started after it are told where it is, and requests sent
// through it without pause fail none during a rolling update of five
// replicas and a scale from five to one and back; a kill -9 of one pod
// costs at most the requests in flight on it.
func TestServicesRolloutsDropNothing(t *testing.T) {
	dir := t.TempDir()
	s := startUp(t, dir)
	k := newKubectl(t, s)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := k.run("", "get", "deploy,rs,pods,endpointslices", "-o", "yaml")
			t.Logf("what the API holds:\n%s", out)
		}
	})
	port := freeTCPPort(t)
	k.must("service/web created", strings.ReplaceAll(servedDeployment, "SERVICE_PORT", port), "apply", "-f", "-")
	k.must("successfully rolled out", "", "rollout", "status", "deployment/web", "--timeout=90s")
	url := "http://127.0.0.1:" + port + "/"
	answers := func(want string) func() bool {
		return func() bool {
			resp, err := http.Get(url)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return strings.HasPrefix(string(b), want)
		}
	}
	poll.Until(t, "the Service answering through the proxy", 30*time.Second, answers("v1 (pod web-"))

	out := k.must("endpointslice.discovery.k8s.io/web-", "", "get", "svc,endpointslices")
	if !strings.Contains(out, "service/web") || !strings.Contains(out, port+"/TCP") {
		t.Fatalf("kubectl get svc,endpointslices:\n%s", out)
	}
	poll.Until(t, "describe svc to list the five endpoints", 30*time.Second, func() bool {
		out, err := k.run("", "describe", "svc", "web")
		return err == nil && strings.Contains(out, "Endpoints:") && strings.Contains(out, "127.0.0.1:") && strings.Contains(out, "+ 2 more")
	})

	// A pod started after the Service is told where it is.
	k.must("pod/client created", `apiVersion: v1
kind: Pod
metadata: {name: client}
spec: {containers: [{name: c, command: [sh, -c, 'echo "web at $WEB_SERVICE_HOST:$WEB_SERVICE_PORT"; exec sleep 3600']}]}
`, "apply", "-f", "-")
	poll.Until(t, "the client told of the Service", 30*time.Second, func() bool {
		out, err := k.run("", "logs", "client")
		return err == nil && strings.Contains(out, "web at 127.0.0.1:"+port)
	})

	l := startLoad(url, 4)
	defer l.end()
	phase := func(name string, do func()) {
		do()
		ok, errs := l.take()
		t.Logf("%s: %d requests, %d failed", name, ok+len(errs), len(errs))
		if ok == 0 {
			t.Fatalf("%s: no request succeeded", name)
		}
		if len(errs) > 0 {
			t.Fatalf("%s: %d of %d requests failed, first: %s", name, len(errs), ok+len(errs), errs[0])
		}
	}
	l.take()
	phase("rolling update", func() {
		k.must("deployment.apps/web patched", "", "patch", "deployment", "web", "--type=json",
			`-p=[{"op":"replace","path":"/spec/template/spec/containers/0/command/5","value":"v2"}]`)
		k.must("successfully rolled out", "", "rollout", "status", "deployment/web", "--timeout=120s")
		poll.Until(t, "only v2 answering", 30*time.Second, func() bool {
			out, err := k.run("", "get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.spec.containers[0].command[5]}{\" \"}{end}")
			return err == nil && !strings.Contains(out, "v1")
		})
	})
	phase("scale to one and back", func() {
		k.must("scaled", "", "scale", "deployment/web", "--replicas=1")
		poll.Until(t, "one pod left", 60*time.Second, func() bool {
			out, err := k.run("", "get", "pods", "-l", "app=web", "-o", "name")
			return err == nil && strings.Count(out, "pod/") == 1
		})
		k.must("scaled", "", "scale", "deployment/web", "--replicas=5")
		k.must("successfully rolled out", "", "rollout", "status", "deployment/web", "--timeout=120s")
	})

	// kill -9: the requests in flight on that process fail, no more.
	pidOut := k.must("", "", "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].status.containerStatuses[0].pid} {.items[0].metadata.name}")
	pidText, pod, _ := strings.Cut(strings.TrimSpace(pidOut), " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		t.Fatalf("pid of a pod: %q", pidOut)
	}
	l.take()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the killed pod restarted and ready", 60*time.Second, func() bool {
		out, err := k.run("", "get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].ready}")
		return err == nil && strings.TrimSpace(out) == "1 true"
	})
	ok, errs := l.take()
	t.Logf("kill -9 of one of five pods: %d requests, %d failed %v", ok+len(errs), len(errs), errs)
	if ok == 0 || len(errs) > 4 {
		t.Fatalf("kill -9: %d of %d requests failed; at most the 4 clients' requests in flight may", len(errs), ok+len(errs))
	}
}

// background runs kubectl until the test ends and returns what it has
// printed so far.
func (k *kubectlRunner) background(args ...string) func() string {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "HOME="+k.home), k.env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return out.String
}

var forwarding = regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> `)

// forwardedAt waits for a port-forward to say where it listens.
func forwardedAt(t *testing.T, out func() string) string {
	t.Helper()
	var addr string
	poll.Until(t, "the port-forward listening", 30*time.Second, func() bool {
		m := forwarding.FindStringSubmatch(out())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}

// Through the API, as its admin: homeostat port-forward reaches a ready
// pod of a Service by the Service's port name, kubectl port-forward a pod
// by its port's number and a Service whose target port is a number; a
// port the pod does not declare is refused, since it is its node's.
func TestPortForwardThroughTheAPI(t *testing.T) {
	s := startUp(t, t.TempDir())
	k := newKubectl(t, s)
	port := freeTCPPort(t)
	k.must("service/web created", strings.ReplaceAll(servedDeployment, "SERVICE_PORT", port), "apply", "-f", "-")
	k.must("successfully rolled out", "", "rollout", "status", "deployment/web", "--timeout=90s")
	say := func(addr string) string {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	svcFwd := forwardedAt(t, startBackground(t, s, "port-forward", "svc/web", "0:http"))
	if got := say(svcFwd); !strings.HasPrefix(got, "v1 (pod web-") {
		t.Fatalf("through homeostat port-forward svc/web: %q", got)
	}

	out := k.must("", "", "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name} {.items[0].status.containerStatuses[0].ports[0].containerPort}")
	pod, number, _ := strings.Cut(strings.TrimSpace(out), " ")
	podFwd := forwardedAt(t, k.background("port-forward", "pod/"+pod, ":"+number))
	if got := say(podFwd); !strings.HasPrefix(got, "v1 (pod "+pod+",") {
		t.Fatalf("through kubectl port-forward pod/%s :%s: %q", pod, number, got)
	}

	// kubectl reaches a Service whose target port is a number, through a
	// pod it picks (a named port the node picked has number 0 in the
	// pod's spec, which kubectl reads).
	ports := freeTCPPorts(t, 2)
	k.must("service/fixed created", fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: fixed}
spec:
  replicas: 1
  selector: {matchLabels: {app: fixed}}
  template:
    metadata: {labels: {app: fixed}}
    spec:
      containers:
      - name: web
        command: [homeostat, demo, --listen, "127.0.0.1:$(PORT)", --message, fixed]
        ports: [{containerPort: %[1]s}]
        readinessProbe: {tcpSocket: {port: %[1]s}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: fixed}
spec:
  selector: {app: fixed}
  ports: [{port: %[2]s, targetPort: %[1]s}]
`, ports[0], ports[1]), "apply", "-f", "-")
	k.must("successfully rolled out", "", "rollout", "status", "deployment/fixed", "--timeout=90s")
	svcKubectl := forwardedAt(t, k.background("port-forward", "svc/fixed", ":"+ports[1]))
	if got := say(svcKubectl); !strings.HasPrefix(got, "fixed (pod fixed-") {
		t.Fatalf("through kubectl port-forward svc/fixed: %q", got)
	}

	// The API's own port is its node's, not the pod's.
	apiPort := s.url[strings.LastIndex(s.url, ":")+1:]
	refusedOut := k.background("port-forward", "pod/"+pod, ":"+apiPort)
	refused := forwardedAt(t, refusedOut)
	if got := say(refused); strings.Contains(got, "v1") {
		t.Fatalf("a port the pod does not declare was forwarded: %q", got)
	}
	poll.Until(t, "kubectl to say why", 30*time.Second, func() bool {
		return strings.Contains(refusedOut(), "declares no TCP port "+apiPort)
	})
}
