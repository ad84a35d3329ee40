package chaos

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// A run's node name is its own, and the pod processes a run's agents leave
// behind end with it: otherwise the next run on the machine counts them as
// a second process of its own pods.
func TestRunNodesAreTheirOwn(t *testing.T) {
	a, b := runNodeName("chaos-", "/tmp/TestChaos1/001"), runNodeName("chaos-", "/tmp/TestChaos2/001")
	if a == b {
		t.Fatalf("two runs got one node name, %s", a)
	}
	node := runNodeName("chaos-", t.TempDir())
	cmd := exec.Command("sleep", "600")
	cmd.Env = []string{"HOMEOSTAT_NODE=" + node, "POD_NAMESPACE=chaos", "POD_NAME=web-0", "HOMEOSTAT_CONTAINER=c"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	// Polled: right after exec, the kernel may not show the new
	// environment in /proc yet.
	var got []nodeProc
	poll.Until(t, "the started process among the node's", 10*time.Second, func() bool {
		got = nodeProcesses(node)
		return len(got) > 0
	})
	if len(got) != 1 || got[0].pid != cmd.Process.Pid || got[0].pod != "chaos/web-0" {
		t.Fatalf("the node's processes: got %+v, want the one started", got)
	}
	killNodeProcesses(node)
	poll.Until(t, "the process ended", 10*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}
