package process_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/services/nodeagent/process"
	"github.com/homeostat/homeostat/testenv/poll"
)

// agentRuntime is a runtime of the given agent identity on node, over dir
// (a restarted agent keeps its data directory).
func agentRuntime(t *testing.T, node, agent, dir string) *process.Runtime {
	t.Helper()
	r, err := process.New(process.Config{Node: node, Agent: agent, Dir: dir,
		BackoffBase: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond, BackoffReset: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// uniqueNode names a node no other test process uses, so that scanning
// /proc finds only this test's processes.
func uniqueNode(t *testing.T) string {
	return "n-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
}

// live reports whether pid runs (a zombie, dead but not yet reaped, does not).
func live(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// Processes another agent started on the same node are not this agent's:
// it neither discovers them nor stops them when cleaning up.
func TestOtherAgentsProcessesAreNeverTouched(t *testing.T) {
	node := uniqueNode(t)
	r1 := agentRuntime(t, node, "agent-1", t.TempDir())
	p := pod(t, kinds.RestartAlways, sh("c", "exec sleep 3600"))
	st, _ := run(t, r1, p)
	poll.Until(t, "r1's pod running", 10*time.Second, func() bool {
		s := st.get()
		return s.Phase == kinds.PodRunning && first(s).PID > 0
	})
	pid := st.first().PID

	r2 := agentRuntime(t, node, "agent-2", t.TempDir())
	found, err := r2.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Fatalf("agent-2 discovered %v: agent-1's processes", found)
	}
	r2.Cleanup(context.Background(), map[string]bool{})
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("agent-1's container process %d is gone after agent-2's Cleanup: %v", pid, err)
	}
	if !live(pid) {
		t.Fatalf("agent-1's container process %d exited after agent-2's Cleanup", pid)
	}
	if c := st.first(); c.PID != pid || c.RestartCount != 0 || c.State.Running == nil {
		t.Fatalf("agent-1's container after agent-2's Cleanup: %+v; want still running as pid %d, no restarts", c, pid)
	}
}

// A container that dies while no agent watches it counts as a restart: the
// next agent, handed the pod's last reported status, starts it again with
// its restart count one higher and the death as its last state.
func TestRestartCountCountsDeathsWhileAgentDown(t *testing.T) {
	node, dir := uniqueNode(t), t.TempDir()
	r1 := agentRuntime(t, node, "agent-1", dir)
	p := pod(t, kinds.RestartAlways, sh("c", "exec sleep 3600"))
	st1, stop1 := run(t, r1, p)
	poll.Until(t, "running under r1", 10*time.Second, func() bool {
		s := st1.get()
		return s.Phase == kinds.PodRunning && first(s).PID > 0
	})
	before := st1.first()
	if before.RestartCount != 0 {
		t.Fatalf("restart count before: %d; want 0", before.RestartCount)
	}
	stop1() // the agent stops; its containers keep running
	if !live(before.PID) {
		t.Fatalf("container %d died with its agent", before.PID)
	}
	last := st1.get()

	// The container dies while no agent runs.
	if err := syscall.Kill(-before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the killed container gone", 10*time.Second, func() bool { return !live(before.PID) })

	r2 := agentRuntime(t, node, "agent-1", dir)
	if found, err := r2.Discover(context.Background()); err != nil || found[p.Metadata.UID] {
		t.Fatalf("r2 discovered the dead container: %v %v", found, err)
	}
	again := *p
	again.Status = last
	st2, _ := run(t, r2, &again)
	poll.Until(t, "running again under r2", 10*time.Second, func() bool {
		s := st2.get()
		c := first(s)
		return s.Phase == kinds.PodRunning && c.State.Running != nil && c.PID > 0 && c.PID != before.PID
	})
	after := st2.first()
	if after.RestartCount != before.RestartCount+1 {
		t.Errorf("restart count after a death while the agent was down: %d; want %d", after.RestartCount, before.RestartCount+1)
	}
	if after.LastTerminationState.Terminated == nil {
		t.Errorf("last state after a death while the agent was down: %+v; want terminated", after.LastTerminationState)
	}
	if !live(after.PID) {
		t.Errorf("the restarted container %d is not running", after.PID)
	}
}

// A pod whose last status says it finished for good is not run again: Run
// reports that status and returns, starting no process.
func TestFinishedPodIsNotRunAgain(t *testing.T) {
	node := uniqueNode(t)
	r := agentRuntime(t, node, "agent-1", t.TempDir())
	for _, phase := range []string{kinds.PodSucceeded, kinds.PodFailed} {
		marker := filepath.Join(t.TempDir(), "ran")
		p := pod(t, kinds.RestartAlways, sh("c", "touch "+marker+"; exec sleep 3600"))
		code := int32(0)
		if phase == kinds.PodFailed {
			code = 1
		}
		p.Status = kinds.PodStatus{Phase: phase, ContainerStatuses: []kinds.ContainerStatus{{Name: "c",
			State: kinds.ContainerState{Terminated: &kinds.StateTerminated{ExitCode: code, Reason: "Completed"}}}}}
		st := &statuses{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx, p, st.report) }()
		t.Cleanup(func() { cancel(); <-done; r.Stop(context.Background(), p.Metadata.UID, time.Second) })
		poll.Until(t, "Run of a "+phase+" pod to return", 10*time.Second, func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		})
		if got := st.get(); got.Phase != phase || len(got.ContainerStatuses) != 1 || got.ContainerStatuses[0].State.Terminated == nil {
			t.Errorf("%s pod: reported %+v; want its last status", phase, got)
		}
		if n := countMarked(node, p.Metadata.UID); n != 0 {
			t.Errorf("%s pod: %d processes started", phase, n)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%s pod: its container ran", phase)
		}
	}
}
