package process_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/services/nodeagent/process"
	"github.com/homeostat/homeostat/testenv/poll"
)

func logOf(t *testing.T, r *process.Runtime, p *kinds.Pod) string {
	t.Helper()
	path, err := r.LogPath(p.Metadata.UID, p.Spec.Containers[0].Name, false)
	if err != nil {
		return ""
	}
	b, _ := os.ReadFile(path)
	return string(b)
}

func waitingReason(st *statuses) (string, string) {
	if w := st.first().State.Waiting; w != nil {
		return w.Reason, w.Message
	}
	return "", ""
}

// A pod's securityContext decides whom its processes run as: honoured by
// an agent running as root; refused, with the reason in the container's
// state, where the agent cannot honour it.
func TestRunAsUser(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	yes := true
	root := os.Getuid() == 0
	r := newRuntime(t, "n-runas")

	asNobody := pod(t, kinds.RestartNever, sh("c", "echo uid=$(id -u) gid=$(id -g) groups=$(id -G)"))
	asNobody.Spec.SecurityContext = &kinds.SecurityContext{RunAsUser: n(65534), RunAsGroup: n(65533)}
	st, _ := run(t, r, asNobody)
	if root {
		poll.Until(t, "the pod to finish", 10*time.Second, func() bool { return st.get().Phase == kinds.PodSucceeded })
		if out := logOf(t, r, asNobody); !strings.Contains(out, "uid=65534 gid=65533 groups=65533") {
			t.Fatalf("ran as %q, want uid=65534 gid=65533 and no other group", out)
		}
	} else {
		poll.Until(t, "the container refused", 10*time.Second, func() bool {
			reason, msg := waitingReason(st)
			return reason == "CreateContainerConfigError" && strings.Contains(msg, "cannot start a process as uid 65534")
		})
	}

	// runAsNonRoot with no user, on an agent running as root, is refused;
	// the container never runs.
	marker := t.TempDir() + "/ran"
	nonRoot := pod(t, kinds.RestartAlways, sh("c", "touch "+marker))
	nonRoot.Spec.Containers[0].SecurityContext = &kinds.SecurityContext{RunAsNonRoot: &yes}
	st, _ = run(t, r, nonRoot)
	if root {
		poll.Until(t, "the container refused", 10*time.Second, func() bool {
			reason, msg := waitingReason(st)
			return reason == "CreateContainerConfigError" && strings.Contains(msg, "runAsNonRoot")
		})
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("a runAsNonRoot container ran as root")
		}
		if ph := st.get().Phase; ph != kinds.PodPending {
			t.Fatalf("a refused pod is %s, want Pending", ph)
		}
	} else {
		poll.Until(t, "the container to run as the agent's own user", 10*time.Second, func() bool {
			_, err := os.Stat(marker)
			return err == nil
		})
	}

	// The node's default user applies to a pod naming none.
	def, err := process.New(process.Config{Node: "n-runas-default", Agent: "test-agent", Dir: t.TempDir(),
		DefaultUser: &process.Identity{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}})
	if err != nil {
		t.Fatal(err)
	}
	plain := pod(t, kinds.RestartNever, sh("c", "id -u"))
	st, _ = run(t, def, plain)
	poll.Until(t, "the default-user pod to finish", 10*time.Second, func() bool { return st.get().Phase == kinds.PodSucceeded })
	if out := strings.TrimSpace(logOf(t, def, plain)); out != strconv.Itoa(os.Getuid()) {
		t.Fatalf("ran as %q", out)
	}
}
