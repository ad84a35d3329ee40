package process_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/services/nodeagent/process"
	"github.com/homeostat/homeostat/testenv/poll"
)

// webWithPickedPorts is a container declaring two ports without numbers,
// whose process writes what it was told to file and serves HTTP on the
// port named http, with a readiness probe that finds it by that name.
func webWithPickedPorts(file string) kinds.Container {
	c := sh("web", `echo "$PORT $PORT_HTTP $PORT_METRICS_X" > `+file+`; exec `+os.Args[0]+` "$PORT_HTTP"`)
	c.Env = []kinds.EnvVar{{Name: "HELPER_SERVER", Value: "1"}}
	c.Ports = []kinds.ContainerPort{{Name: "http"}, {Name: "metrics-x"}}
	c.ReadinessProbe = &kinds.Probe{HTTPGet: &kinds.HTTPGetAction{Path: "/healthz", Port: kinds.IntOrString{IsString: true, Str: "http"}},
		PeriodSeconds: 1, FailureThreshold: 1}
	return c
}

// portsOf reads the numbers a container status gives its ports, by name.
func portsOf(cs kinds.ContainerStatus) map[string]int32 {
	out := map[string]int32{}
	for _, p := range cs.Ports {
		out[p.Name] = p.ContainerPort
	}
	return out
}

// Ports declared without a number are given free ones of the range, told
// to the process, found by the probes and shown in the status; no two
// pods get one port, a declared number another pod holds fails the pod,
// and a restarted agent gives an adopted process the ports it was told
// even when no status said them.
func TestPortsGivenToProcesses(t *testing.T) {
	node, dir := uniqueNode(t), t.TempDir()
	r := agentRuntime(t, node, "agent-1", dir)
	told := t.TempDir() + "/a"
	a := pod(t, kinds.RestartAlways, webWithPickedPorts(told))
	stA, stopA := run(t, r, a)
	poll.Until(t, "pod a ready, its ports in its status", 10*time.Second, func() bool {
		cs := stA.first()
		return cs.Ready && len(cs.Ports) == 2
	})
	got := portsOf(stA.first())
	http, metrics := got["http"], got["metrics-x"]
	for name, n := range got {
		if n < process.DefaultPortMin || n > process.DefaultPortMax {
			t.Fatalf("port %s was given %d, outside %d–%d", name, n, process.DefaultPortMin, process.DefaultPortMax)
		}
	}
	if http == metrics {
		t.Fatalf("both ports were given %d", http)
	}
	raw, err := os.ReadFile(told)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join([]string{strconv.Itoa(int(http)), strconv.Itoa(int(http)), strconv.Itoa(int(metrics))}, " "); strings.TrimSpace(string(raw)) != want {
		t.Fatalf("the process was told PORT, PORT_HTTP, PORT_METRICS_X = %q, want %q", strings.TrimSpace(string(raw)), want)
	}

	b := pod(t, kinds.RestartAlways, webWithPickedPorts(t.TempDir()+"/b"))
	stB, _ := run(t, r, b)
	poll.Until(t, "pod b ready", 10*time.Second, func() bool { return stB.first().Ready })
	for name, n := range portsOf(stB.first()) {
		if n == http || n == metrics {
			t.Fatalf("pod b's port %s was given %d, which pod a holds", name, n)
		}
	}

	fixed := sh("c", "exec sleep 3600")
	fixed.Ports = []kinds.ContainerPort{{ContainerPort: http}}
	c := pod(t, kinds.RestartAlways, fixed)
	c.Metadata.Name = "c"
	stC, _ := run(t, r, c)
	poll.Until(t, "pod c failed: its port is pod a's", 10*time.Second, func() bool {
		s := stC.get()
		return s.Phase == kinds.PodFailed && s.Reason == "NodePorts" &&
			strings.Contains(s.Message, "TCP/"+strconv.Itoa(int(http))) && strings.Contains(s.Message, "default/p")
	})

	// The agent stops (its containers keep running); the next one finds
	// pod a's process, and a has no status that names its ports.
	pid := stA.first().PID
	stopA()
	r2 := agentRuntime(t, node, "agent-1", dir)
	if _, err := r2.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := *a
	again.Status = kinds.PodStatus{}
	stA2, _ := run(t, r2, &again)
	poll.Until(t, "pod a adopted, ready", 10*time.Second, func() bool {
		cs := stA2.first()
		return cs.Ready && cs.PID == pid
	})
	if after := portsOf(stA2.first()); after["http"] != http || after["metrics-x"] != metrics {
		t.Fatalf("the adopted process was given ports %v, want those it listens on: http %d, metrics-x %d", after, http, metrics)
	}
}
