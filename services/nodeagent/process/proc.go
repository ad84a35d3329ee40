package process

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Environment markers put on every container process, so that a restarted
// agent finds its processes in /proc whatever happened to its own state.
const (
	envNode      = "HOMEOSTAT_NODE"
	envAgent     = "HOMEOSTAT_AGENT"
	envPodUID    = "HOMEOSTAT_POD_UID"
	envContainer = "HOMEOSTAT_CONTAINER"
	envRestarts  = "HOMEOSTAT_RESTARTS"
	envPorts     = "HOMEOSTAT_PORTS"
)

// found is a container process discovered in /proc.
type found struct {
	pid       int
	podUID    string
	container string
	restarts  int
	ports     map[string]int32 // the numbers of its named ports
}

// scan finds the process-group leaders carrying the markers of this node
// and agent.
func scan(node, agent string) []found {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []found
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		vars := map[string]string{}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if k, v, ok := strings.Cut(string(kv), "="); ok && strings.HasPrefix(k, "HOMEOSTAT_") {
				vars[k] = v
			}
		}
		if vars[envNode] != node || vars[envAgent] != agent || vars[envPodUID] == "" || zombie(pid) {
			continue
		}
		n, _ := strconv.Atoi(vars[envRestarts])
		out = append(out, found{pid: pid, podUID: vars[envPodUID], container: vars[envContainer], restarts: n, ports: parsePorts(vars[envPorts])})
	}
	return out
}

// alive reports whether pid exists and has not exited (zombies count as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	return !zombie(pid)
}

func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// signalGroup signals a container's whole process group.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}
