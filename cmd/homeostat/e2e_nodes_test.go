package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

const demoManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: demo}
spec:
  replicas: 3
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: web
        command: [homeostat, demo, --listen, "127.0.0.1:0", --message, "%s"]
        readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
`

type podView struct {
	Metadata struct {
		Name              string  `json:"name"`
		UID               string  `json:"uid"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Status struct {
		Phase             string `json:"phase"`
		ContainerStatuses []struct {
			Ready        bool `json:"ready"`
			RestartCount int  `json:"restartCount"`
			PID          int  `json:"pid"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (s *server) pods(t *testing.T) []podView {
	out, _, err := s.run("", "get", "pods", "-l", "app=demo", "-o", "json")
	if err != nil {
		return nil
	}
	var l struct{ Items []podView }
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("pods json: %v\n%s", err, out)
	}
	return l.Items
}

func readyPods(ps []podView) []podView {
	var out []podView
	for _, p := range ps {
		if p.Metadata.DeletionTimestamp == nil && p.Status.Phase == "Running" && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].Ready && p.Status.ContainerStatuses[0].PID > 0 {
			out = append(out, p)
		}
	}
	return out
}

var listening = regexp.MustCompile(`listening on (\S+)`)

// answer finds a pod's address in its log and asks it who it is.
func (s *server) answer(t *testing.T, pod string) string {
	t.Helper()
	var addr string
	poll.Until(t, "the address in the log of "+pod, 10*time.Second, func() bool {
		out, _, err := s.run("", "logs", pod)
		m := listening.FindStringSubmatch(out)
		if err != nil || m == nil {
			return false
		}
		addr = m[1]
		return true
	})
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("pod %s at %s does not answer: %v", pod, addr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The walk-through of the README on the built binary: real processes
// start, crash and restart, are replaced, scaled, rolled out and logged.
func TestBinaryRunsRealWorkloads(t *testing.T) {
	node := fmt.Sprintf("e2e-%d", os.Getpid())
	s := startUp(t, t.TempDir(), "--node-name", node, "--restart-backoff", "200ms")
	manifest := demoManifest
	watch := startBackground(t, s, "get", "pods", "-w")
	s.must(fmt.Sprintf(manifest, "v1"), "apply", "-f", "-")

	poll.Until(t, "3 running pods with real PIDs", 30*time.Second, func() bool { return len(readyPods(s.pods(t))) == 3 })
	pods := readyPods(s.pods(t))
	for _, p := range pods {
		if syscall.Kill(p.Status.ContainerStatuses[0].PID, 0) != nil {
			t.Fatalf("pod %s reports PID %d, which is not running", p.Metadata.Name, p.Status.ContainerStatuses[0].PID)
		}
		if got := s.answer(t, p.Metadata.Name); !strings.HasPrefix(got, "v1 (pod "+p.Metadata.Name) {
			t.Fatalf("pod %s answered %q", p.Metadata.Name, got)
		}
	}
	poll.Until(t, "get -w to show the pods running", 10*time.Second, func() bool {
		return strings.Count(watch(), "Running") >= 3 && strings.Contains(watch(), "NAME")
	})
	// One apply reads as one trace, from the API down to the pods' start.
	// Spans are written in batches each second.
	steps := []string{"POST /apis/apps/v1/namespaces/default/deployments", "reconcile deployment", "reconcile replicaset", "bind", "start pod"}
	poll.Until(t, "the trace of the apply", 15*time.Second, func() bool {
		tr, _, _ := s.run("", "trace", "deployment/demo")
		for _, step := range steps {
			if !strings.Contains(tr, step) {
				return false
			}
		}
		return true
	})
	out := s.must("", "get", "pods", "-o", "wide")
	if !strings.Contains(out, node) || strings.Count(out, "Running") != 3 {
		t.Fatalf("get pods -o wide:\n%s", out)
	}

	// Kill a process: the agent restarts it.
	victim := pods[0]
	if err := syscall.Kill(victim.Status.ContainerStatuses[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the killed container restarted", 30*time.Second, func() bool {
		for _, p := range readyPods(s.pods(t)) {
			if p.Metadata.UID == victim.Metadata.UID && p.Status.ContainerStatuses[0].RestartCount == 1 &&
				p.Status.ContainerStatuses[0].PID != victim.Status.ContainerStatuses[0].PID {
				return true
			}
		}
		return false
	})
	if prev, _, err := s.run("", "logs", victim.Metadata.Name, "--previous"); err != nil || !strings.Contains(prev, "listening on") {
		t.Fatalf("logs --previous: %v\n%s", err, prev)
	}

	// Delete a pod: it is stopped and replaced.
	gone := pods[1]
	s.must("", "delete", "pod", gone.Metadata.Name)
	poll.Until(t, "a replacement", 30*time.Second, func() bool {
		ps := readyPods(s.pods(t))
		for _, p := range ps {
			if p.Metadata.UID == gone.Metadata.UID {
				return false
			}
		}
		return len(ps) == 3
	})
	if syscall.Kill(gone.Status.ContainerStatuses[0].PID, 0) == nil {
		t.Fatal("the deleted pod's process still runs")
	}

	// Scale.
	s.must("", "scale", "deployment/demo", "--replicas", "5")
	poll.Until(t, "5 pods", 30*time.Second, func() bool { return len(readyPods(s.pods(t))) == 5 })
	s.must("", "scale", "deployment/demo", "--replicas", "2")
	poll.Until(t, "2 pods", 30*time.Second, func() bool { return len(s.pods(t)) == 2 })

	// Roll out a new version and follow it to the end.
	s.must(fmt.Sprintf(manifest, "v2"), "apply", "-f", "-")
	if out := s.must("", "rollout", "status", "deployment/demo"); !strings.Contains(out, `deployment "demo" successfully rolled out`) {
		t.Fatalf("rollout status:\n%s", out)
	}
	poll.Until(t, "only v2 pods", 30*time.Second, func() bool { return len(s.pods(t)) == 2 && len(readyPods(s.pods(t))) == 2 })
	for _, p := range readyPods(s.pods(t)) {
		if got := s.answer(t, p.Metadata.Name); !strings.HasPrefix(got, "v2") {
			t.Fatalf("after the rollout, pod %s answered %q", p.Metadata.Name, got)
		}
	}
	hist := s.must("", "rollout", "history", "deployment/demo")
	if !regexp.MustCompile(`(?m)^1\s+demo-\S+`).MatchString(hist) || !regexp.MustCompile(`(?m)^2\s+demo-\S+`).MatchString(hist) {
		t.Fatalf("rollout history:\n%s", hist)
	}
	undo := s.must("", "rollout", "undo", "deployment/demo")
	s.must("", "rollout", "status", "deployment/demo")
	if !poll.Within(30*time.Second, func() bool {
		ps := readyPods(s.pods(t))
		return len(ps) == 2 && len(s.pods(t)) == 2 && strings.HasPrefix(s.answer(t, ps[0].Metadata.Name), "v1")
	}) {
		t.Fatalf("timed out after 30s waiting for v1 again; undo said %q\n%s\n%s\n%s", undo,
			s.must("", "get", "rs", "-o", "yaml"), s.must("", "get", "pods", "-o", "wide"), s.must("", "explain", "deployment/demo"))
	}
	// Follow a log: new lines arrive while it streams.
	p := readyPods(s.pods(t))[0].Metadata.Name
	m := listening.FindStringSubmatch(s.must("", "logs", p))
	follow := startBackground(t, s, "logs", "-f", p)
	for i := 0; i < 3; i++ {
		_, _ = http.Get("http://" + m[1] + "/")
	}
	poll.Until(t, "followed lines", 10*time.Second, func() bool { return strings.Count(follow(), "GET /") >= 3 })

	// Stopping Homeostat stops the pods' processes too.
	var pids []int
	for _, p := range readyPods(s.pods(t)) {
		pids = append(pids, p.Status.ContainerStatuses[0].PID)
	}
	s.stop()
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("process %s left running after up stopped", strconv.Itoa(pid))
		}
	}
}

// The benchmark runs (small here) and reports against the store's ceiling.
func TestBinaryBench(t *testing.T) {
	profiles := t.TempDir()
	out, errOut, err := (&server{t: t}).runBare("bench", "--nodes", "4", "--replicas", "20", "--deployments", "3", "--per", "4", "--timeout", "2m",
		"--runs", "2", "--cpuprofile", profiles, "--controllers", "2", "--schedulers", "2")
	if err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out, errOut)
	}
	// Two controller processes count their reconciles; between them they
	// ran some.
	total := 0
	for _, m := range regexp.MustCompile(`work of controllers-[12] +CPU +[0-9.]+ s \( *\d+% of a core\), (\d+) reconciles`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	if total == 0 {
		t.Fatalf("no reconciles counted in the controllers' work:\n%s", out)
	}
	// Each pod's three writes, by the writers that made them: its create
	// by the controllers, its bind by the leading scheduler, its status by
	// its node. A writer counts a write when it reads the store's answer,
	// which may come after the bench saw the last pod Running: the bench
	// waits for the counts, but a write whose answer was lost is never
	// counted, so a few may be missing (the bus's own test holds the
	// counts exact); none is counted twice, nor by another writer.
	blocks := writersOf(t, out)
	if len(blocks) != 4 {
		t.Fatalf("%d reports of writes by writer, want one a run:\n%s", len(blocks), out)
	}
	for _, b := range blocks {
		for _, role := range []string{"controllers", "scheduler", "nodeagent"} {
			if got := b.sum(role, "pods"); got > 1.005 || got < 0.75 {
				t.Errorf("%s wrote %.2f pod writes a pod, want 1:\n%s", role, got, out)
			}
		}
	}
	for _, want := range []string{"all 20 pods Running", "all 12 pods Running", "throughput / ceiling", "peak memory scheduler-2", "store ceiling",
		"work of scheduler-1", "work of controllers-2",
		"store writes per pod", "    pods ", "1 deployment(s) x 20 replicas on 4 nodes: median of 2 runs",
		"work of nats ", "work of bench (its watch and clients)", "peak memory nats ", "created -> bound p99", "last pod bound after"} {
		if !strings.Contains(out, want) {
			t.Fatalf("bench output lacks %q:\n%s", want, out)
		}
	}
	// Where the pods' time went: the steps come in order, and the cores
	// were busy some of it.
	m := regexp.MustCompile(`last pod created, bound, Running after (\S+), (\S+), (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("bench output lacks the pods' steps:\n%s", out)
	}
	var steps []time.Duration
	for _, v := range m[1:] {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("step %q: %v", v, err)
		}
		steps = append(steps, d)
	}
	if !(0 < steps[0] && steps[0] <= steps[1] && steps[1] <= steps[2]) {
		t.Errorf("the last pod created, bound and Running after %v", steps)
	}
	if !regexp.MustCompile(`the machine's cores busy +[1-9]\d*% of the time`).MatchString(out) {
		t.Errorf("bench output lacks how busy the cores were:\n%s", out)
	}
	for comp, n := range map[string]int{"controllers": 2, "scheduler": 2, "nodeagent": 1, "nats-store": 1, "bench": 1} {
		// A component's profile is written only if the bench asked it
		// to start one (SIGUSR1) and to stop it (SIGUSR2, or at its end).
		m, _ := filepath.Glob(filepath.Join(profiles, "1x20-run2", comp+"-*.prof"))
		if len(m) != n {
			t.Errorf("%d CPU profiles of %s in %s, want %d", len(m), comp, profiles, n)
		}
		for _, f := range m {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				t.Errorf("CPU profile %s: empty or missing (%v)", f, err)
			}
		}
		if m, _ := filepath.Glob(filepath.Join(profiles, "1x20-run2", comp+"-*.heap")); len(m) != n {
			t.Errorf("%d heap profiles of %s in %s, want %d", len(m), comp, profiles, n)
		}
	}
}

// With --via-api the Deployments go through the API (TLS, the admin's
// client certificate), and the API's own figures follow.
func TestBinaryBenchViaAPI(t *testing.T) {
	keep := t.TempDir()
	out, errOut, err := (&server{t: t}).runBare("bench", "--via-api", "--nodes", "3", "--replicas", "15", "--deployments", "2", "--per", "3",
		"--timeout", "2m", "--runs", "1", "--api-create-rate", "100", "--api-clients", "4", "--api-watchers", "5", "--api-watch-writes", "50",
		"--keep", keep)
	if err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out, errOut)
	}
	// --keep keeps each run's store and logs.
	for _, f := range []string{"1x15-run1/api.log", "1x15-run1/controllers.log", "2x3-run1/scheduler.log", "2x3-run1/store"} {
		if _, err := os.Stat(filepath.Join(keep, f)); err != nil {
			t.Errorf("--keep: %v", err)
		}
	}
	// and will not run over a kept run.
	if out, _, err := (&server{t: t}).runBare("bench", "--nodes", "3", "--replicas", "15", "--deployments", "0", "--runs", "1", "--keep", keep); err == nil {
		t.Fatalf("bench ran over a kept run:\n%s", out)
	}
	for _, want := range []string{"1 deployment(s) x 15 replicas on 3 nodes, through the API", "all 15 pods Running",
		"2 deployment(s) x 3 replicas on 3 nodes, through the API", "all 6 pods Running",
		"API: list of 15 pods", "API: creates from 4 clients", "50 writes to 5 watchers", "peak memory api", "    audit ",
		"work of api "} {
		if !strings.Contains(out, want) {
			t.Fatalf("bench output lacks %q:\n%s", want, out)
		}
	}
	// Every create answered, the clients connected before the clock (in
	// a time above zero: the connections were made), and every event
	// delivered.
	if !regexp.MustCompile(`API: creates from 4 clients +\d+/s achieved, p50 \S+ +p99 \S+, 0 failed \(their connections opened before, in [0-9.]*[1-9][0-9.]*(µs|ms|s)\)`).MatchString(out) ||
		!regexp.MustCompile(`after the write's answer, 0 missed`).MatchString(out) {
		t.Fatalf("bench's API probes lost creates or events, or did not connect first:\n%s", out)
	}
	if strings.Count(out, "API: list of") != 1 {
		t.Fatalf("the API probes should follow the first scenario only:\n%s", out)
	}
	// The API counts its own writes: each Deployment's create and its
	// audit record.
	blocks := writersOf(t, out)
	if len(blocks) != 2 {
		t.Fatalf("%d reports of writes by writer, want one a run:\n%s", len(blocks), out)
	}
	for i, deployments := range []float64{1.0 / 15, 2.0 / 6} {
		for _, stream := range []string{"deployments.apps", "audit"} {
			if got := blocks[i].sum("api", stream); math.Abs(got-deployments) > 0.006 {
				t.Errorf("run %d: the API wrote %.2f a pod to %s, want %.2f:\n%s", i+1, got, stream, deployments, out)
			}
		}
	}
}

// writtenBy is one report of the writes per pod by writer: by writer,
// then stream.
type writtenBy map[string]map[string]float64

// sum adds up what the writers named role (role, or role-N) wrote to
// stream.
func (w writtenBy) sum(role, stream string) float64 {
	total := 0.0
	for name, streams := range w {
		if name == role || strings.HasPrefix(name, role+"-") || strings.HasPrefix(name, role+" ") {
			total += streams[stream]
		}
	}
	return total
}

// writersOf reads every report of writes by writer in a bench's output.
func writersOf(t *testing.T, out string) []writtenBy {
	t.Helper()
	var blocks []writtenBy
	var cur writtenBy
	line := regexp.MustCompile(`^    (.+?) +(\d+\.\d\d)(?:  (.*))?$`)
	part := regexp.MustCompile(`^(.+) (\d+\.\d\d)$`)
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "  store writes per pod by writer"):
			cur = writtenBy{}
			blocks = append(blocks, cur)
		case cur == nil:
		case strings.HasPrefix(l, "    counted by no writer read"):
			cur = nil
		default:
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("unreadable line of writes by writer %q:\n%s", l, out)
			}
			streams := map[string]float64{}
			for _, p := range strings.Split(m[3], ", ") {
				if pm := part.FindStringSubmatch(p); pm != nil {
					streams[pm[1]], _ = strconv.ParseFloat(pm[2], 64)
				}
			}
			cur[m[1]] = streams
		}
	}
	return blocks
}

// TestRolloutUndoPutsTheTemplateBackWhole: after a rollout that added a
// template annotation, undo brings back the old template as it was, so
// the controller takes the old ReplicaSet back as the newest revision
// rather than making a third one.
func TestRolloutUndoPutsTheTemplateBackWhole(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	v1 := fmt.Sprintf(demoManifest, "v1")
	v2 := strings.Replace(fmt.Sprintf(demoManifest, "v2"), "metadata: {labels: {app: demo}}",
		"metadata: {labels: {app: demo}, annotations: {note: second}}", 1)
	s.must(v1, "apply", "-f", "-")
	poll.Until(t, "revision 1", 30*time.Second, func() bool { return len(revisionsOf(t, s)) == 1 })
	s.must(v2, "apply", "-f", "-")
	poll.Until(t, "revision 2", 30*time.Second, func() bool { return len(revisionsOf(t, s)) == 2 })
	first := revisionsOf(t, s)["1"]

	s.must("", "rollout", "undo", "deployment/demo")
	var revs map[string]string
	if !poll.Within(30*time.Second, func() bool { revs = revisionsOf(t, s); return revs["3"] != "" }) {
		t.Fatalf("no revision 3 after undo: %v", revs)
	}
	if len(revs) != 2 || revs["3"] != first {
		t.Fatalf("undo should make ReplicaSet %s revision 3 again; revisions are %v", first, revs)
	}
	var d struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(s.must("", "get", "deployment", "demo", "-o", "json")), &d); err != nil {
		t.Fatal(err)
	}
	if a := d.Spec.Template.Metadata.Annotations; len(a) > 0 {
		t.Fatalf("the undone template keeps the later annotations %v", a)
	}
}

// revisionsOf reads `rollout history` as revision → ReplicaSet.
func revisionsOf(t *testing.T, s *server) map[string]string {
	out, _, err := s.run("", "rollout", "history", "deployment/demo")
	if err != nil {
		return nil
	}
	revs := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(\d+)\s+(\S+)`).FindAllStringSubmatch(out, -1) {
		revs[m[1]] = m[2]
	}
	return revs
}
