package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/nodeagent/process"
)

// Simulated is a runtime that runs nothing: a pod's containers report
// Running and Ready after Delay. It lets one process host many virtual
// nodes for scale tests and benchmarks. Its pods' ports are booked as a
// real node's are, so that Services find them, but nothing listens.
type Simulated struct {
	delay time.Duration
	ports *process.PortBook
}

// NewSimulated is a simulated node's runtime.
func NewSimulated(delay time.Duration) *Simulated {
	return &Simulated{delay: delay, ports: process.NewPortBook(0, 0, nil)}
}

// Discover finds nothing to stop: a simulated container has no process
// to outlive its host. Run adopts those its pod's status says run.
func (*Simulated) Discover(context.Context) (map[string]bool, error) { return nil, nil }

// Run reports the pod creating, then running and ready, and returns: a
// simulated container has nothing to watch, and a goroutine kept waiting
// for each of a host's hundred thousand pods cost it hundreds of
// megabytes of stacks. A pod whose status already says every container
// runs is adopted as it is, and nothing is reported, as a real node's
// agent adopts the processes that outlived it: a restarted host then
// writes nothing for its pods, where it would otherwise rewrite every one
// of them at once.
func (s *Simulated) Run(ctx context.Context, pod *kinds.Pod, report func(kinds.PodStatus)) {
	_, mains, err := s.ports.Assign(pod, process.PortsBefore(pod.Status))
	if err != nil {
		report(kinds.PodStatus{Phase: kinds.PodFailed, Reason: "NodePorts", Message: err.Error()})
		return
	}
	if adopted(pod) {
		return
	}
	var cs []kinds.ContainerStatus
	for _, c := range mains {
		cs = append(cs, kinds.ContainerStatus{Name: c.Name, Image: c.Image, Ports: c.Ports,
			State: kinds.ContainerState{Waiting: &kinds.StateWaiting{Reason: "ContainerCreating"}}})
	}
	if s.delay > 0 {
		report(kinds.PodStatus{Phase: kinds.PodPending, ContainerStatuses: cs, Conditions: conditions(object.ConditionFalse)})
		if !clock.Sleep(ctx, s.delay) {
			return
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	started := true
	for i := range cs {
		cs[i].State = kinds.ContainerState{Running: &kinds.StateRunning{StartedAt: now}}
		cs[i].Ready, cs[i].Started = true, &started
	}
	report(kinds.PodStatus{Phase: kinds.PodRunning, ContainerStatuses: cs, Conditions: conditions(object.ConditionTrue)})
}

// adopted says a simulated pod resumes with the status it has: it is
// Running and each of its containers runs.
func adopted(pod *kinds.Pod) bool {
	st := pod.Status
	if st.Phase != kinds.PodRunning || len(st.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for i, c := range pod.Spec.Containers {
		if cs := st.ContainerStatuses[i]; cs.Name != c.Name || cs.State.Running == nil {
			return false
		}
	}
	return true
}

func conditions(ready string) []object.Condition {
	return []object.Condition{
		{Type: kinds.PodInitialized, Status: object.ConditionTrue},
		{Type: kinds.ContainersReady, Status: ready},
		{Type: kinds.PodReady, Status: ready},
	}
}

// Stop gives the pod's ports back.
func (s *Simulated) Stop(_ context.Context, uid string, _ time.Duration) { s.ports.Release(uid) }

// Cleanup cleans nothing.
func (*Simulated) Cleanup(context.Context, map[string]bool) {}

// Project writes nothing: simulated containers read no files.
func (*Simulated) Project(*kinds.Pod, []kinds.ProjectedVolume) error { return nil }

// LogPath: simulated containers write no logs.
func (*Simulated) LogPath(string, string, bool) (string, error) {
	return "", errors.New("simulated containers write no logs")
}

// SimConfig configures a process hosting many simulated nodes.
type SimConfig struct {
	Bus    *bus.Conn
	Logger *slog.Logger
	// Nodes to host, named <Prefix>-<i>.
	Nodes  int
	Prefix string
	// Identity of the hosting agent; each node's is Identity/<node name>.
	Identity string
	// Capacity of each node (default 32 cpu, 128Gi, 110 pods).
	Capacity kinds.ResourceList
	// Delay before a pod reports Running.
	Delay          time.Duration
	HeartbeatEvery time.Duration
	Grace          time.Duration
}

// RunSimulated runs the simulated nodes until ctx ends.
func RunSimulated(ctx context.Context, cfg SimConfig) error {
	if cfg.Prefix == "" {
		cfg.Prefix = "sim"
	}
	if cfg.Capacity == nil {
		cfg.Capacity = kinds.ResourceList{"cpu": "32", "memory": "128Gi", "pods": "110"}
	}
	// One field tracker serves every simulated node.
	fields, err := BuiltinFields()
	if err != nil {
		return err
	}
	pods, err := cfg.Bus.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		return err
	}
	var workers sync.WaitGroup
	defer workers.Wait() // after cancel, below
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	writes := startPacer(ctx, &workers, hostWrites)
	// One watch of every pod serves every node.
	shared := newSharedIndex()
	agents := make([]*Agent, 0, cfg.Nodes)
	for i := range cfg.Nodes {
		name := fmt.Sprintf("%s-%d", cfg.Prefix, i)
		identity := ""
		if cfg.Identity != "" {
			identity = cfg.Identity + "/" + name
		}
		a, err := New(Config{
			Bus: cfg.Bus, Logger: cfg.Logger, NodeName: name, Identity: identity,
			Runtime: NewSimulated(cfg.Delay), Capacity: cfg.Capacity,
			Labels:         map[string]string{"homeostat.io/simulated": "true"},
			HeartbeatEvery: cfg.HeartbeatEvery, Grace: cfg.Grace, Fields: fields, Index: shared, DerivesPods: true, Pace: writes.Go,
		})
		if err != nil {
			return err
		}
		agents = append(agents, a)
	}
	errs := make(chan error, cfg.Nodes)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); shared.run(ctx, pods) }()
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(ctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
