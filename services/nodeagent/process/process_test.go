package process_test

import (
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/nodeagent/process"
	"github.com/homeostat/homeostat/testenv/poll"
)

// statuses collects what the runtime reports.
type statuses struct {
	mu   sync.Mutex
	last kinds.PodStatus
	all  []kinds.PodStatus
}

func (s *statuses) report(st kinds.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = st
	s.all = append(s.all, st)
}

func (s *statuses) get() kinds.PodStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *statuses) seen(f func(kinds.PodStatus) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.all {
		if f(st) {
			return true
		}
	}
	return false
}

func first(st kinds.PodStatus) kinds.ContainerStatus {
	if len(st.ContainerStatuses) == 0 {
		return kinds.ContainerStatus{}
	}
	return st.ContainerStatuses[0]
}

func (s *statuses) first() kinds.ContainerStatus { return first(s.get()) }

func newRuntime(t *testing.T, node string) *process.Runtime {
	t.Helper()
	r, err := process.New(process.Config{Node: node, Agent: "test-agent", Dir: t.TempDir(),
		BackoffBase: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond, BackoffReset: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var uidSeq int

func pod(t *testing.T, policy string, containers ...kinds.Container) *kinds.Pod {
	uidSeq++
	grace := int64(2)
	return &kinds.Pod{
		Object: &object.Object{Metadata: object.Meta{Name: "p", Namespace: "default",
			UID: t.Name() + "-" + strconv.Itoa(uidSeq)}},
		Spec: &kinds.PodSpec{RestartPolicy: policy, Containers: containers, TerminationGracePeriodSeconds: &grace},
	}
}

func sh(name, script string) kinds.Container {
	return kinds.Container{Name: name, Command: []string{"/bin/sh", "-c", script}}
}

// run starts the pod and returns its status log and a stop that ends supervision.
func run(t *testing.T, r *process.Runtime, p *kinds.Pod) (*statuses, func()) {
	st := &statuses{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx, p, st.report) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(func() { stop(); r.Stop(context.Background(), p.Metadata.UID, time.Second) })
	return st, stop
}

func TestRestartPolicies(t *testing.T) {
	r := newRuntime(t, "n-restart")
	// Never: a failure is final.
	never, _ := run(t, r, pod(t, kinds.RestartNever, sh("c", "exit 3")))
	poll.Until(t, "Failed", 5*time.Second, func() bool { return never.get().Phase == kinds.PodFailed })
	if ts := never.first().State.Terminated; ts == nil || ts.ExitCode != 3 || ts.Reason != "Error" {
		t.Fatalf("terminated state: %+v", ts)
	}
	// OnFailure: failures restart, success ends it.
	marker := t.TempDir() + "/ran"
	onf, _ := run(t, r, pod(t, kinds.RestartOnFailure, sh("c", "if [ -f "+marker+" ]; then exit 0; fi; touch "+marker+"; exit 1")))
	poll.Until(t, "Succeeded after one restart", 5*time.Second, func() bool {
		st := onf.get()
		return st.Phase == kinds.PodSucceeded && first(st).RestartCount == 1
	})
	// Always: even a clean exit restarts, with a growing crash-loop backoff.
	always, _ := run(t, r, pod(t, kinds.RestartAlways, sh("c", "exit 0")))
	poll.Until(t, "three restarts", 10*time.Second, func() bool { return always.first().RestartCount >= 3 })
	if !always.seen(func(st kinds.PodStatus) bool {
		w := first(st).State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	}) {
		t.Fatal("never reported CrashLoopBackOff")
	}
	if !always.seen(func(st kinds.PodStatus) bool {
		lt := first(st).LastTerminationState.Terminated
		return lt != nil && lt.Reason == "Completed"
	}) {
		t.Fatal("lastState never showed the previous termination")
	}
}

// A command that cannot be started fails with the reason in its status,
// not an empty log.
func TestStartErrorSaysWhy(t *testing.T) {
	r := newRuntime(t, "n-starterror")
	st, _ := run(t, r, pod(t, kinds.RestartNever, kinds.Container{Name: "c", Command: []string{"no-such-command-here"}}))
	poll.Until(t, "Failed", 5*time.Second, func() bool { return st.get().Phase == kinds.PodFailed })
	ts := st.first().State.Terminated
	if ts == nil || ts.ExitCode != 128 || ts.Reason != "StartError" || !strings.Contains(ts.Message, "no-such-command-here") {
		t.Fatalf("terminated state: %+v", ts)
	}
}

// With a log shim, each line of the output is stamped with its time, the
// last ones (written as the container stops) included.
func TestLogShimStampsOutput(t *testing.T) {
	r, err := process.New(process.Config{Node: "n-shim", Agent: "test-agent", Dir: t.TempDir(),
		LogShim: []string{os.Args[0], "logshim-helper"}})
	if err != nil {
		t.Fatal(err)
	}
	p := pod(t, kinds.RestartNever, sh("c", "echo first; trap 'echo last words; exit 0' TERM; while true; do sleep 0.1; done"))
	st, _ := run(t, r, p)
	poll.Until(t, "running", 5*time.Second, func() bool { return st.first().State.Running != nil })
	path, err := r.LogPath(p.Metadata.UID, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	read := func() string { b, _ := os.ReadFile(path); return string(b) }
	poll.Until(t, "the first line, stamped", 5*time.Second, func() bool { return strings.HasSuffix(read(), "Z first\n") })
	if _, err := time.Parse(process.StampLayout, read()[:len(process.StampLayout)]); err != nil {
		t.Fatalf("the log does not start with a time: %q", read())
	}
	// Stop removes the pod's directory; the file stays readable through
	// a descriptor opened before.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r.Stop(context.Background(), p.Metadata.UID, 5*time.Second)
	poll.Until(t, "the last words, stamped", 5*time.Second, func() bool {
		b, _ := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
		return strings.Contains(string(b), "Z last words\n")
	})
}

func TestStopSendsTermThenKill(t *testing.T) {
	r := newRuntime(t, "n-stop")
	dir := t.TempDir()
	out, trapped := dir+"/term", dir+"/trapped"
	// Running is reported once the process starts, which may be before the
	// shell has set its trap: wait for the trap, or SIGTERM kills it outright.
	polite := pod(t, kinds.RestartAlways, sh("c", "trap 'echo got-term > "+out+"; exit 0' TERM; touch "+trapped+"; while true; do sleep 0.1; done"))
	st, stop := run(t, r, polite)
	poll.Until(t, "running", 5*time.Second, func() bool { return st.get().Phase == kinds.PodRunning })
	poll.Until(t, "the TERM trap set", 5*time.Second, func() bool { _, err := os.Stat(trapped); return err == nil })
	pid := st.first().PID
	stop()
	r.Stop(context.Background(), polite.Metadata.UID, 5*time.Second)
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "got-term" {
		t.Fatalf("the process did not get SIGTERM first: %q %v", b, err)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("process still alive after Stop")
	}
	// One that ignores SIGTERM is killed after the grace period.
	ignoring := dir + "/ignoring"
	stubborn := pod(t, kinds.RestartAlways, sh("c", "trap '' TERM; touch "+ignoring+"; while true; do sleep 0.1; done"))
	st2, stop2 := run(t, r, stubborn)
	poll.Until(t, "running", 5*time.Second, func() bool { return st2.get().Phase == kinds.PodRunning })
	poll.Until(t, "SIGTERM ignored", 5*time.Second, func() bool { _, err := os.Stat(ignoring); return err == nil })
	pid2 := st2.first().PID
	stop2()
	start := time.Now()
	r.Stop(context.Background(), stubborn.Metadata.UID, 500*time.Millisecond)
	if time.Since(start) < 500*time.Millisecond {
		t.Fatal("SIGKILL came before the grace period")
	}
	if syscall.Kill(pid2, 0) == nil {
		t.Fatal("stubborn process survived")
	}
}

func TestProbes(t *testing.T) {
	r := newRuntime(t, "n-probe")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	flag := t.TempDir() + "/ready"
	c := sh("web", "exec "+os.Args[0]+" "+strconv.Itoa(port))
	c.Env = []kinds.EnvVar{{Name: "HELPER_SERVER", Value: "1"}}
	c.ReadinessProbe = &kinds.Probe{Exec: &kinds.ExecAction{Command: []string{"test", "-f", flag}}, PeriodSeconds: 1, FailureThreshold: 1}
	c.LivenessProbe = &kinds.Probe{HTTPGet: &kinds.HTTPGetAction{Path: "/healthz", Port: kinds.IntOrString{Int: int32(port)}}, PeriodSeconds: 1, FailureThreshold: 2}
	c.StartupProbe = &kinds.Probe{TCPSocket: &kinds.TCPSocketAction{Port: kinds.IntOrString{Int: int32(port)}}, PeriodSeconds: 1, FailureThreshold: 30}
	st, _ := run(t, r, pod(t, kinds.RestartAlways, c))
	poll.Until(t, "started but not ready", 10*time.Second, func() bool {
		s := st.get()
		return first(s).Started != nil && *first(s).Started && !first(s).Ready
	})
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "ready", 10*time.Second, func() bool {
		s := st.get()
		return first(s).Ready && object.FindCondition(s.Conditions, kinds.PodReady).Status == "True"
	})
	if c := object.FindCondition(st.get().Conditions, kinds.PodReady); c.Message != "" {
		t.Fatalf("a ready pod's Ready condition says %q", c.Message)
	}
	os.Remove(flag)
	// Not ready again, and the pod says why.
	poll.Until(t, "not ready again, the probe's failure named", 10*time.Second, func() bool {
		s := st.get()
		c := object.FindCondition(s.Conditions, kinds.PodReady)
		return !first(s).Ready && c.Reason == "ContainersNotReady" &&
			strings.HasPrefix(c.Message, "containers with unready status: [web]: web: Readiness probe failed: exit status 1")
	})
	// Sicken the server: liveness fails twice, the container restarts.
	resp, err := httpPost("http://127.0.0.1:" + strconv.Itoa(port) + "/sicken")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp
	poll.Until(t, "a liveness restart", 15*time.Second, func() bool {
		s := st.get()
		lt := first(s).LastTerminationState.Terminated
		return first(s).RestartCount >= 1 && lt != nil && strings.HasPrefix(lt.Message, "Liveness probe failed")
	})
}

func TestLogsAndPrevious(t *testing.T) {
	r := newRuntime(t, "n-logs")
	p := pod(t, kinds.RestartAlways, sh("c", "echo run-$HOMEOSTAT_RESTARTS; exit 1"))
	st, _ := run(t, r, p)
	poll.Until(t, "a restart", 5*time.Second, func() bool { return st.first().RestartCount >= 1 })
	poll.Until(t, "logs of both instances", 5*time.Second, func() bool {
		cur, err1 := r.LogPath(p.Metadata.UID, "c", false)
		prev, err2 := r.LogPath(p.Metadata.UID, "c", true)
		if err1 != nil || err2 != nil {
			return false
		}
		a, _ := os.ReadFile(prev)
		b, _ := os.ReadFile(cur)
		n := st.first().RestartCount
		return strings.TrimSpace(string(b)) == "run-"+strconv.Itoa(int(n)) && strings.HasPrefix(string(a), "run-")
	})
}

// A new runtime (a restarted agent) adopts the processes of desired pods
// and stops those of pods that are gone.
func TestAdoptionAfterRestart(t *testing.T) {
	node := "n-adopt-" + strconv.Itoa(os.Getpid())
	r1 := newRuntime(t, node)
	keep := pod(t, kinds.RestartAlways, sh("c", "while true; do sleep 0.1; done"))
	drop := pod(t, kinds.RestartAlways, sh("c", "while true; do sleep 0.1; done"))
	stK, stopK := run(t, r1, keep)
	stD, stopD := run(t, r1, drop)
	poll.Until(t, "both running", 5*time.Second, func() bool {
		return stK.get().Phase == kinds.PodRunning && stD.get().Phase == kinds.PodRunning
	})
	pidK, pidD := stK.first().PID, stD.first().PID
	stopK()
	stopD() // the agent goes away; the processes stay
	if syscall.Kill(pidK, 0) != nil || syscall.Kill(pidD, 0) != nil {
		t.Fatal("processes died with the agent")
	}
	r2 := newRuntime(t, node)
	found, err := r2.Discover(context.Background())
	if err != nil || !found[keep.Metadata.UID] || !found[drop.Metadata.UID] {
		t.Fatalf("discover: %v %v", found, err)
	}
	st2, _ := run(t, r2, keep)
	poll.Until(t, "the kept pod adopted", 5*time.Second, func() bool {
		s := st2.get()
		return s.Phase == kinds.PodRunning && first(s).PID == pidK
	})
	r2.Cleanup(context.Background(), map[string]bool{keep.Metadata.UID: true})
	poll.Until(t, "the dropped pod stopped", 15*time.Second, func() bool { return syscall.Kill(pidD, 0) != nil })
	if syscall.Kill(pidK, 0) != nil {
		t.Fatal("the kept pod's process was stopped")
	}
	// Never twice: the adopted process is the only one for its container.
	if n := countMarked(node, keep.Metadata.UID); n != 1 {
		t.Fatalf("%d processes for the kept pod", n)
	}
}

func countMarked(node, uid string) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		env := string(b)
		if strings.Contains(env, "HOMEOSTAT_NODE="+node+"\x00") && strings.Contains(env, "HOMEOSTAT_POD_UID="+uid+"\x00") {
			if pgid, _ := syscall.Getpgid(mustAtoi(e.Name())); pgid == mustAtoi(e.Name()) {
				n++
			}
		}
	}
	return n
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
