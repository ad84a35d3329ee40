// Package process runs pod containers as OS processes, each in its own
// process group: restart policies with crash-loop backoff, liveness,
// readiness and startup probes, logs in size-bounded files, resource limits
// through cgroups v2 where the machine offers it, and adoption of its
// processes by a restarted agent, so that no process is orphaned and no pod
// runs twice.
package process

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Config configures the runtime.
type Config struct {
	// Node is the node name and Agent the agent's identity; together they
	// mark the processes as this agent's, so that it adopts and stops only
	// what it started.
	Node  string
	Agent string
	// Dir holds container logs.
	Dir string
	// MaxLogBytes bounds each container log (default 10 MiB).
	MaxLogBytes int64
	Logger      *slog.Logger
	// Crash-loop backoff: Base doubling to Max, forgotten after a
	// container runs for Reset (defaults 10s, 5m, 10m).
	BackoffBase, BackoffMax, BackoffReset time.Duration
	// DefaultUser is whom a container runs as when neither it nor its pod
	// names a runAsUser; nil runs it as the agent runs.
	DefaultUser *Identity
	// LogShim is the command of the log shim (RunLogShim), such as
	// homeostat logshim; without one, output goes to the log unstamped.
	LogShim []string
	// PortMin and PortMax bound the ports the runtime picks for ports
	// declared without a number (default DefaultPortMin–DefaultPortMax).
	PortMin, PortMax int32
}

// Runtime runs containers as processes.
type Runtime struct {
	cfg     Config
	log     *slog.Logger
	cgroups bool
	// agent is whom the agent runs as.
	agent Identity

	ports *PortBook

	mu      sync.Mutex
	procs   map[string]map[string]*proc // pod uid -> container -> process
	adopted map[string]map[string]found // survivors not yet claimed by Run
}

// proc is a running container process.
type proc struct {
	pid      int
	started  time.Time
	exited   chan struct{}
	exitCode int32
	signal   int32
	child    bool // we can wait for it; an adopted one we can only watch
	// startErr says why the process could not be started, if it was not.
	startErr string
}

// New prepares the runtime.
func New(cfg Config) (*Runtime, error) {
	if cfg.Dir == "" || cfg.Node == "" || cfg.Agent == "" {
		return nil, os.ErrInvalid
	}
	if cfg.MaxLogBytes == 0 {
		cfg.MaxLogBytes = 10 << 20
	}
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = 10 * time.Second
	}
	if cfg.BackoffMax == 0 {
		cfg.BackoffMax = 5 * time.Minute
	}
	if cfg.BackoffReset == 0 {
		cfg.BackoffReset = 10 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	r := &Runtime{cfg: cfg, log: log, procs: map[string]map[string]*proc{}, adopted: map[string]map[string]found{},
		ports: NewPortBook(cfg.PortMin, cfg.PortMax, osFree), agent: Identity{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}}
	if r.agent.UID == 0 && cfg.DefaultUser == nil {
		log.Warn("the node agent runs as root and has no default pod user: a pod that names no securityContext.runAsUser runs as root; set one with --pod-user")
	}
	ok, why := cgroupsAvailable()
	r.cgroups = ok
	if !ok {
		log.Info("resource limits are not enforced", "reason", why)
	}
	return r, nil
}

// LimitsEnforced reports whether cgroups v2 limits apply.
func (r *Runtime) LimitsEnforced() bool { return r.cgroups }

// Discover finds this node's processes that outlived an earlier agent.
func (r *Runtime) Discover(context.Context) (map[string]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	uids := map[string]bool{}
	for _, f := range scan(r.cfg.Node, r.cfg.Agent) {
		m := r.adopted[f.podUID]
		if m == nil {
			m = map[string]found{}
			r.adopted[f.podUID] = m
		}
		if prev, dup := m[f.container]; dup {
			// Never one container twice: keep the newer instance.
			r.log.Warn("two processes for one container; stopping the older", "pod", f.podUID, "container", f.container)
			if prev.restarts > f.restarts {
				prev, f = f, prev
			}
			go r.kill(prev.pid, 5*time.Second)
		}
		m[f.container] = f
		uids[f.podUID] = true
	}
	return uids, nil
}

// claim takes an adopted process for a container, if there is one.
func (r *Runtime) claim(podUID, container string) (found, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.adopted[podUID][container]
	if ok {
		delete(r.adopted[podUID], container)
	}
	return f, ok
}

func (r *Runtime) register(podUID, container string, p *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.procs[podUID] == nil {
		r.procs[podUID] = map[string]*proc{}
	}
	r.procs[podUID][container] = p
}

// Stop stops every container of a pod: SIGTERM to each process group,
// SIGKILL to what is left after grace.
func (r *Runtime) Stop(_ context.Context, podUID string, grace time.Duration) {
	r.mu.Lock()
	procs := r.procs[podUID]
	delete(r.procs, podUID)
	for c, f := range r.adopted[podUID] {
		if procs == nil {
			procs = map[string]*proc{}
		}
		procs[c] = watchPID(f.pid)
	}
	delete(r.adopted, podUID)
	r.mu.Unlock()
	var wg sync.WaitGroup
	for c, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stopProc(p, grace)
			if r.cgroups {
				removeCgroup(podUID, c)
			}
		}()
	}
	wg.Wait()
	r.ports.Release(podUID)
	_ = os.RemoveAll(filepath.Join(r.cfg.Dir, "pods", podUID))
}

// Cleanup stops the surviving processes of pods that are not in keep.
func (r *Runtime) Cleanup(ctx context.Context, keep map[string]bool) {
	r.mu.Lock()
	var gone []string
	for uid := range r.adopted {
		if !keep[uid] {
			gone = append(gone, uid)
		}
	}
	r.mu.Unlock()
	for _, uid := range gone {
		r.log.Info("stopping the processes of a pod no longer on this node", "pod", uid)
		r.Stop(ctx, uid, 10*time.Second)
	}
	entries, _ := os.ReadDir(filepath.Join(r.cfg.Dir, "pods"))
	for _, e := range entries {
		if !keep[e.Name()] {
			_ = os.RemoveAll(filepath.Join(r.cfg.Dir, "pods", e.Name()))
		}
	}
}

func (r *Runtime) kill(pid int, grace time.Duration) { stopProc(watchPID(pid), grace) }

// stopProc: SIGTERM to the group, then SIGKILL after grace.
func stopProc(p *proc, grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	signalGroup(p.pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		// The leader is gone; make sure nothing of its group lingers.
		signalGroup(p.pid, syscall.SIGKILL)
		return
	case <-t.C:
	}
	signalGroup(p.pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
}

// watchPID follows a process that is not our child by polling /proc.
func watchPID(pid int) *proc {
	p := &proc{pid: pid, exited: make(chan struct{}), exitCode: -1}
	go func() {
		defer close(p.exited)
		for alive(pid) {
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return p
}
