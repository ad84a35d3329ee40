package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/testenv"
	"github.com/homeostat/homeostat/testenv/poll"
)

// binary is the homeostat command, built once per test run.
func binary(t *testing.T) string {
	t.Helper()
	return testenv.Binary(t, "github.com/homeostat/homeostat/cmd/homeostat")
}

// server is a running `homeostat up`.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	nats string
	// kubeconfig is the admin kubeconfig up wrote; http a client of it.
	kubeconfig string
	http       *http.Client
	out        *syncBuffer
	done       chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var apiLine = regexp.MustCompile(`API:\s+(https?://\S+)`)
var natsLine = regexp.MustCompile(`NATS:\s+(nats://\S+)`)

// nodeName gives each data directory a node name of its own, so that no
// test touches the pods of another `up` on the machine, and a restart over
// the same directory is the same node.
func nodeName(dataDir string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dataDir))
	return fmt.Sprintf("e2e-%08x", h.Sum32())
}

func startUp(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	return startUpWith(t, dataDir, nil, append([]string{"--data-dir", dataDir}, extra...)...)
}

// startUpWith starts up with more environment; dataDir is where it keeps
// its data, whether or not args name it.
func startUpWith(t *testing.T, dataDir string, env []string, extra ...string) *server {
	t.Helper()
	args := []string{"up", "--listen", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0"}
	if !slices.Contains(extra, "--node-name") {
		args = append(args, "--node-name", nodeName(dataDir))
	}
	args = append(args, extra...)
	cmd := exec.Command(binary(t), args...)
	// GOGC too: one given would stand, where the tests check the pace.
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=", "HOMEOSTAT_SERVER=", "KUBECONFIG=", "GOGC=")
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, out: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var api string
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(s.out, line)
			if m := apiLine.FindStringSubmatch(line); m != nil {
				api = m[1]
			}
			if m := natsLine.FindStringSubmatch(line); m != nil {
				urls <- [2]string{api, m[1]}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { s.done <- cmd.Wait() }()
	select {
	case u := <-urls:
		s.url, s.nats = u[0], u[1]
		s.http = http.DefaultClient
		if strings.HasPrefix(s.url, "https://") {
			s.kubeconfig, s.http = adminOf(t, dataDir)
		}
	case err := <-s.done:
		t.Fatalf("homeostat up exited: %v\n%s", err, s.out)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("homeostat up did not print its address\n%s", s.out)
	}
	t.Cleanup(func() { s.stop() })
	s.waitReady()
	return s
}

// adminOf reads the admin kubeconfig that up wrote in dataDir.
func adminOf(t *testing.T, dataDir string) (string, *http.Client) {
	t.Helper()
	path := filepath.Join(dataDir, "admin.kubeconfig")
	target, err := kubeconfig.LoadTarget(path)
	if err != nil {
		t.Fatalf("up wrote no usable kubeconfig: %v", err)
	}
	return path, target.HTTPClient()
}

// flags make a client verb reach the server as its admin.
func (s *server) flags() []string {
	if s.kubeconfig == "" {
		return []string{"--server", s.url}
	}
	return []string{"--kubeconfig", s.kubeconfig, "--server", s.url}
}

func (s *server) waitReady() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := s.http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("server not ready: %v\n%s", err, s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop interrupts the server as Ctrl-C would and waits for a clean exit.
func (s *server) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	if s.t.Failed() {
		s.t.Logf("homeostat up printed, to the end:\n%s", lastLines(s.out.String(), 400))
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("homeostat up did not exit cleanly: %v\n%s", err, s.out)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		s.t.Errorf("homeostat up did not stop within 30s\n%s", s.out)
	}
}

// run runs a client verb against the server and returns stdout, stderr and the error.
func (s *server) run(stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(s.t), append(s.flags(), args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// runBare runs the binary with no --server.
func (s *server) runBare(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(s.t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (s *server) must(stdin string, args ...string) string {
	s.t.Helper()
	out, errOut, err := s.run(stdin, args...)
	if err != nil {
		s.t.Fatalf("homeostat %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

const e2eManifest = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        command: [sleep, "3600"]
`

func TestBinaryUpApplyGetDelete(t *testing.T) {
	dir := t.TempDir()
	s := startUp(t, dir)
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, []byte(e2eManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := s.must("", "apply", "-f", file); out != "namespace/shop created\ndeployment.apps/web created\n" {
		t.Fatalf("first apply:\n%s", out)
	}
	if out := s.must("", "apply", "-f", file); out != "namespace/shop unchanged\ndeployment.apps/web unchanged\n" {
		t.Fatalf("second apply:\n%s", out)
	}
	// The table has its columns at once; the rollout reaches 2/2 (how fast
	// it passes through 0/2 and 1/2 is the system's business).
	table := regexp.MustCompile(`^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\nweb\s+(\d)/2\s+\d\s+\d\s+\d+s\n$`)
	if out := s.must("", "get", "deployments", "-n", "shop"); !table.MatchString(out) {
		t.Fatalf("get table:\n%s", out)
	}
	poll.Until(t, "web 2/2 in the table", 30*time.Second, func() bool {
		out, _, err := s.run("", "get", "deployments", "-n", "shop")
		m := table.FindStringSubmatch(out)
		return err == nil && m != nil && m[1] == "2"
	})
	if out := s.must("", "get", "ns,deploy", "-n", "shop"); !strings.Contains(out, "shop ") || !strings.Contains(out, "\nweb ") {
		t.Fatalf("get ns,deploy:\n%s", out)
	}
	// The process serves its metrics: queues, reconciles, informers, and
	// its collector paced (a heap this small may grow by far more than
	// itself between collections: GOGC above Go's 100).
	poll.Until(t, "controller metrics", 15*time.Second, func() bool {
		resp, err := s.http.Get(s.url + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := string(b)
		return strings.Contains(m, `homeostat_reconcile_duration_seconds_count{controller="deployment"`) &&
			strings.Contains(m, `homeostat_workqueue_depth{controller="replicaset"}`) &&
			strings.Contains(m, `homeostat_informer_synced{kind="Pod"} 1`) &&
			strings.Contains(m, `homeostat_workqueue_adds_total{controller="deployment"}`) && pacedGOGC(m) > 100
	})
	// A changed manifest configures; a removed label goes away.
	changed := strings.Replace(e2eManifest, "replicas: 2", "replicas: 4", 1)
	changed = strings.Replace(changed, "labels: {app: web}}\nspec", "labels: {}}\nspec", 1)
	if out := s.must(changed, "apply", "-f", "-"); !strings.Contains(out, "deployment.apps/web configured") {
		t.Fatalf("changed apply:\n%s", out)
	}
	y := s.must("", "get", "deploy/web", "-n", "shop", "-o", "yaml")
	if !strings.Contains(y, "replicas: 4") || strings.Contains(y, "  labels:\n    app: web\n  name: web") {
		t.Fatalf("after configure:\n%s", y)
	}
	// Errors name the field and the rule.
	_, errOut, err := s.run("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad, namespace: shop}\nspec: {replicas: -1, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, command: [x]}]}}}\n", "apply", "-f", "-")
	if err == nil || !strings.Contains(errOut, "spec.replicas") || !strings.Contains(errOut, "minimum") || !strings.Contains(errOut, "Invalid") {
		t.Fatalf("invalid apply: err %v\n%s", err, errOut)
	}
	if out := s.must("", "delete", "deployment", "web", "-n", "shop"); out != "deployment.apps/web deleted\n" {
		t.Fatalf("delete:\n%s", out)
	}
	_, errOut, err = s.run("", "get", "deploy", "web", "-n", "shop")
	if err == nil || !strings.Contains(errOut, "NotFound") {
		t.Fatalf("get after delete: %v %s", err, errOut)
	}

	// A restart over the same data directory keeps every object.
	s.must("", "apply", "-f", file)
	s.stop()
	s2 := startUp(t, dir)
	if out := s2.must("", "get", "deploy", "-n", "shop", "-o", "name"); out != "deployment.apps/web\n" {
		t.Fatalf("after restart:\n%s", out)
	}
	if out := s2.must("", "apply", "-f", file); !strings.Contains(out, "deployment.apps/web unchanged") {
		t.Fatalf("apply after restart:\n%s", out)
	}
}

// pacedGOGC is the GOGC a process's metrics report, 0 when they do not.
func pacedGOGC(metrics string) int {
	m := regexp.MustCompile(`(?m)^go_gc_gogc_percent (\d+)$`).FindStringSubmatch(metrics)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// startBackground runs a client verb that keeps streaming (logs -f,
// get -w) and returns what it has printed so far.
func startBackground(t *testing.T, s *server, args ...string) func() string {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary(t), append(s.flags(), args...)...)
	out := &syncBuffer{}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return out.String
}

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinaries()
	os.Exit(code)
}

// lastLines is the end of a long output, the part that tells what failed.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return fmt.Sprintf("[%d lines before]\n", len(lines)-n) + strings.Join(lines[len(lines)-n:], "\n")
}
