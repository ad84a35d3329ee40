package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// podRun tracks the containers of one pod and turns their states into the
// pod's status.
type podRun struct {
	r      *Runtime
	pod    *kinds.Pod
	report func(kinds.PodStatus)

	mu           sync.Mutex
	inits, mains []*supervisor
	initsDone    bool
	initFailed   bool
}

// Run runs the init containers one after another, then the containers,
// until ctx ends (the containers keep running) or the pod finishes.
//
// The pod's last known status says what happened before this runtime: a
// pod that finished for good is not run again, and restart counts go on
// from where they were, counting a death this runtime did not see.
func (r *Runtime) Run(ctx context.Context, pod *kinds.Pod, report func(kinds.PodStatus)) {
	if pod.Terminal() {
		report(pod.Status)
		return
	}
	inits, mains, err := r.ports.Assign(pod, portsBefore(pod.Status, r.survivors(pod.Metadata.UID)))
	if err != nil {
		// Kubernetes' kubelet refuses such a pod the same way: it fails,
		// and its controller makes another that the scheduler places anew.
		report(kinds.PodStatus{Phase: kinds.PodFailed, Reason: "NodePorts", Message: err.Error()})
		return
	}
	pr := &podRun{r: r, pod: pod, report: report}
	prev := map[string]kinds.ContainerStatus{}
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		prev[cs.Name] = cs
	}
	for _, c := range inits {
		pr.inits = append(pr.inits, newSupervisor(pr, c, true, prev[c.Name]))
	}
	for _, c := range mains {
		pr.mains = append(pr.mains, newSupervisor(pr, c, false, prev[c.Name]))
	}
	pr.changed()
	for _, s := range pr.inits {
		// A pod whose containers already run, or whose init containers all
		// succeeded under an earlier agent, has finished its init.
		if r.hasSurvivors(pod.Metadata.UID) || initsSucceeded(pod.Status, len(pr.inits)) {
			for _, s := range pr.inits {
				s.keep(prev[s.c.Name])
			}
			break
		}
		if ok := s.run(ctx); !ok || ctx.Err() != nil {
			if ctx.Err() == nil {
				pr.mu.Lock()
				pr.initFailed = true
				pr.mu.Unlock()
				pr.changed()
			}
			return
		}
	}
	pr.mu.Lock()
	pr.initsDone = true
	pr.mu.Unlock()
	pr.changed()
	var wg sync.WaitGroup
	for _, s := range pr.mains {
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx) }()
	}
	wg.Wait()
}

// initsSucceeded reports whether a last known status shows every init
// container done with exit code 0.
func initsSucceeded(st kinds.PodStatus, n int) bool {
	if n == 0 || len(st.InitContainerStatuses) != n {
		return false
	}
	for _, cs := range st.InitContainerStatuses {
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			return false
		}
	}
	return true
}

// keep shows a container as it last was, done, without running it.
func (s *supervisor) keep(prev kinds.ContainerStatus) {
	s.mu.Lock()
	if prev.Name != "" {
		s.status = prev
	}
	s.finished, s.ranBefore = true, false
	s.mu.Unlock()
}

// survivors are a pod's adopted processes not yet claimed, by container.
func (r *Runtime) survivors(uid string) map[string]found {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]found, len(r.adopted[uid]))
	for c, f := range r.adopted[uid] {
		out[c] = f
	}
	return out
}

func (r *Runtime) hasSurvivors(uid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.adopted[uid]) > 0
}

// changed reports the pod's status as it now stands.
func (pr *podRun) changed() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	st := kinds.PodStatus{}
	allReady, running, done, failed := len(pr.mains) > 0, false, 0, 0
	for _, s := range pr.inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, s.snapshot())
	}
	for _, s := range pr.mains {
		cs, finished := s.snapshotFinal()
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		allReady = allReady && cs.Ready
		running = running || cs.State.Running != nil
		if finished {
			done++
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 {
				failed++
			}
		}
	}
	switch {
	case pr.initFailed:
		st.Phase, st.Reason = kinds.PodFailed, "InitContainerFailed"
	case done == len(pr.mains) && done > 0 && failed > 0:
		st.Phase = kinds.PodFailed
	case done == len(pr.mains) && done > 0:
		st.Phase = kinds.PodSucceeded
	case running:
		st.Phase = kinds.PodRunning
	default:
		st.Phase = kinds.PodPending
	}
	ready := map[bool]string{true: object.ConditionTrue, false: object.ConditionFalse}
	reason, msg := pr.unready(allReady && pr.initsDone)
	st.Conditions = []object.Condition{
		{Type: kinds.PodInitialized, Status: ready[pr.initsDone]},
		{Type: kinds.ContainersReady, Status: ready[allReady && pr.initsDone], Reason: reason, Message: msg},
		{Type: kinds.PodReady, Status: ready[allReady && pr.initsDone], Reason: reason, Message: msg},
	}
	pr.report(st)
}

// unready says why a pod is not ready, as Kubernetes does ("containers
// with unready status: [web]"), with the failing readiness probe of each
// container that has one, so that the reason is in the pod itself.
func (pr *podRun) unready(ready bool) (reason, msg string) {
	if ready {
		return "", ""
	}
	var names, why []string
	for _, s := range pr.mains {
		cs, probe := s.readyState()
		if cs.Ready {
			continue
		}
		names = append(names, cs.Name)
		if probe != "" {
			why = append(why, cs.Name+": "+probe)
		}
	}
	if len(names) == 0 {
		return "", ""
	}
	msg = fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
	if len(why) > 0 {
		msg += ": " + strings.Join(why, "; ")
	}
	return "ContainersNotReady", msg
}

// supervisor keeps one container running per the pod's restart policy.
type supervisor struct {
	pr   *podRun
	c    kinds.Container
	init bool

	mu       sync.Mutex
	status   kinds.ContainerStatus
	finished bool
	crashes  int
	// ranBefore: the container ran under an earlier agent, so a start that
	// adopts nothing follows a death this runtime did not see.
	ranBefore bool
	// probeFailure is why the readiness probe last failed, while it fails.
	probeFailure string
}

func newSupervisor(pr *podRun, c kinds.Container, init bool, prev kinds.ContainerStatus) *supervisor {
	s := &supervisor{pr: pr, c: c, init: init, status: kinds.ContainerStatus{Name: c.Name, Image: c.Image, Ports: c.Ports,
		State: kinds.ContainerState{Waiting: &kinds.StateWaiting{Reason: "ContainerCreating"}}}}
	s.status.RestartCount = prev.RestartCount
	s.status.LastTerminationState = prev.LastTerminationState
	s.ranBefore = prev.State.Running != nil || prev.State.Terminated != nil || prev.LastTerminationState.Terminated != nil
	return s
}

func (s *supervisor) snapshot() kinds.ContainerStatus {
	cs, _ := s.snapshotFinal()
	return cs
}

func (s *supervisor) snapshotFinal() (kinds.ContainerStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.finished
}

// readyState is the container's status and why its readiness probe last
// failed ("" while it passes).
func (s *supervisor) readyState() (kinds.ContainerStatus, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.probeFailure
}

func (s *supervisor) set(fn func(*kinds.ContainerStatus)) {
	s.mu.Lock()
	fn(&s.status)
	s.mu.Unlock()
	s.pr.changed()
}

// run supervises until ctx ends or the container is done for good; for an
// init container it reports whether it succeeded.
func (s *supervisor) run(ctx context.Context) bool {
	policy := s.pr.pod.Spec.RestartPolicy
	for ctx.Err() == nil {
		p, err := s.startOrAdopt()
		if errors.Is(err, ErrRunAs) {
			// Neither the pod's spec nor the node's setting changes while
			// the agent runs: the container waits, refused, as in
			// Kubernetes, and never runs as anyone else.
			s.set(func(cs *kinds.ContainerStatus) {
				cs.State = kinds.ContainerState{Waiting: &kinds.StateWaiting{Reason: "CreateContainerConfigError", Message: err.Error()}}
			})
			<-ctx.Done()
			return false
		}
		if err != nil {
			s.set(func(cs *kinds.ContainerStatus) {
				cs.State = kinds.ContainerState{Waiting: &kinds.StateWaiting{Reason: "RunContainerError", Message: err.Error()}}
			})
			p = &proc{exited: closed(), exitCode: 128, started: time.Now(), startErr: err.Error()}
		} else {
			s.setRunning(p)
		}
		reason := s.supervise(ctx, p)
		if ctx.Err() != nil {
			return false
		}
		s.setTerminated(p, reason)
		failed := p.exitCode != 0 || reason != ""
		restart := policy == kinds.RestartAlways || policy == "" || (policy == kinds.RestartOnFailure && failed)
		if s.init {
			restart = failed && policy != kinds.RestartNever
		}
		if !restart {
			s.mu.Lock()
			s.finished = true
			s.mu.Unlock()
			s.pr.changed()
			return !failed
		}
		if !s.backoff(ctx, time.Since(p.started)) {
			return false
		}
	}
	return false
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// supervise waits for the process to exit, killing it when a probe says
// so, or returns when ctx ends (leaving it running). It returns the kill
// reason, if any.
func (s *supervisor) supervise(ctx context.Context, p *proc) string {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kill := s.probe(pctx, p)
	select {
	case <-p.exited:
		return ""
	case <-ctx.Done():
		return ""
	case reason := <-kill:
		grace := time.Duration(kinds.Int64(s.pr.pod.Spec.TerminationGracePeriodSeconds, 30)) * time.Second
		stopProc(p, grace)
		return reason
	}
}

// backoff waits before a restart: BackoffBase doubling to BackoffMax,
// shown as CrashLoopBackOff; a container that ran BackoffReset is forgiven.
func (s *supervisor) backoff(ctx context.Context, ran time.Duration) bool {
	cfg := s.pr.r.cfg
	s.mu.Lock()
	if ran >= cfg.BackoffReset {
		s.crashes = 0
	}
	d := cfg.BackoffBase << min(s.crashes, 16)
	d = min(d, cfg.BackoffMax)
	s.crashes++
	s.mu.Unlock()
	s.set(func(cs *kinds.ContainerStatus) {
		cs.State = kinds.ContainerState{Waiting: &kinds.StateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container %s", d, s.c.Name)}}
		cs.Ready = false
	})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	s.mu.Lock()
	s.status.RestartCount++
	s.mu.Unlock()
	return true
}

func (s *supervisor) setRunning(p *proc) {
	started := s.c.StartupProbe == nil
	s.set(func(cs *kinds.ContainerStatus) {
		cs.State = kinds.ContainerState{Running: &kinds.StateRunning{StartedAt: p.started.UTC().Truncate(time.Second)}}
		cs.Started = &started
		cs.Ready = started && s.c.ReadinessProbe == nil
		cs.PID = p.pid
	})
}

func (s *supervisor) setTerminated(p *proc, reason string) {
	s.set(func(cs *kinds.ContainerStatus) {
		t := &kinds.StateTerminated{ExitCode: p.exitCode, Signal: p.signal, StartedAt: p.started.UTC().Truncate(time.Second),
			FinishedAt: time.Now().UTC().Truncate(time.Second)}
		switch {
		case reason != "":
			t.Reason, t.Message = "Unhealthy", reason
		case p.startErr != "":
			t.Reason, t.Message = "StartError", p.startErr
		case p.exitCode == -1:
			t.Reason, t.Message = "Unknown", "the exit status of a process adopted after an agent restart is unknown"
		case p.exitCode == 0:
			t.Reason = "Completed"
		default:
			t.Reason = "Error"
		}
		cs.State = kinds.ContainerState{Terminated: t}
		cs.LastTerminationState = kinds.ContainerState{Terminated: t}
		cs.Ready, cs.PID = false, 0
	})
}

// startOrAdopt adopts a surviving process of this container, or starts one.
func (s *supervisor) startOrAdopt() (*proc, error) {
	r, uid := s.pr.r, s.pr.pod.Metadata.UID
	s.mu.Lock()
	ranBefore := s.ranBefore
	s.ranBefore = false
	s.mu.Unlock()
	if f, ok := r.claim(uid, s.c.Name); ok && alive(f.pid) {
		p := watchPID(f.pid)
		p.started = time.Now()
		s.mu.Lock()
		s.status.RestartCount = max(s.status.RestartCount, int32(f.restarts))
		s.mu.Unlock()
		r.register(uid, s.c.Name, p)
		r.log.Info("adopted a running container", "pod", s.pr.pod.Key(), "container", s.c.Name, "pid", f.pid)
		return p, nil
	}
	if ranBefore {
		// It died while no agent watched it: that death counts too.
		s.mu.Lock()
		s.status.RestartCount++
		s.status.LastTerminationState = kinds.ContainerState{Terminated: &kinds.StateTerminated{ExitCode: -1,
			Reason: "Unknown", Message: "the container exited while its node agent was down",
			FinishedAt: time.Now().UTC().Truncate(time.Second)}}
		s.mu.Unlock()
	}
	return s.start()
}

func (s *supervisor) start() (*proc, error) {
	r, pod := s.pr.r, s.pr.pod
	s.mu.Lock()
	restarts := s.status.RestartCount
	s.mu.Unlock()
	logf, err := r.openLog(pod.Metadata.UID, s.c.Name, restarts > 0)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	who, err := s.runAs()
	if err != nil {
		return nil, err
	}
	env := s.environ(restarts)
	argv := append(append([]string{}, s.c.Command...), s.c.Args...)
	for i := range argv {
		argv[i] = expand(argv[i], envLookup(env))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = s.c.WorkingDir
	out, err := r.logWriter(logf)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: credential(who)}
	if path, err := lookPath(argv[0], cmd.Env); err == nil {
		cmd.Path, cmd.Err = path, nil
	}
	err = cmd.Start()
	if out != logf {
		out.Close() // the container holds it now; the shim sees the end when it is done
	}
	if err != nil {
		return nil, err
	}
	p := &proc{pid: cmd.Process.Pid, started: time.Now(), exited: make(chan struct{}), child: true}
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.signal = int32(ws.Signal())
				p.exitCode = 128 + p.signal
			} else {
				p.exitCode = int32(ee.ExitCode())
			}
		} else if err != nil {
			p.exitCode = 128
		}
		close(p.exited)
	}()
	if r.cgroups && len(s.c.Resources.Limits) > 0 {
		if err := limit(pod.Metadata.UID, s.c.Name, p.pid, s.c.Resources.Limits); err != nil {
			r.log.Warn("could not apply resource limits", "pod", pod.Key(), "container", s.c.Name, "err", err)
		}
	}
	r.register(pod.Metadata.UID, s.c.Name, p)
	go s.boundLog(p)
	return p, nil
}

// runAs is whom the container's processes run as: nil, as the agent.
func (s *supervisor) runAs() (*Identity, error) {
	r := s.pr.r
	return runAs(runAsInput{pod: s.pr.pod.Spec.SecurityContext, container: s.c.SecurityContext,
		def: r.cfg.DefaultUser, agent: r.agent, primaryGID: primaryGID})
}

// boundLog keeps the container's log within its size until it exits.
func (s *supervisor) boundLog(p *proc) {
	path := filepath.Join(s.pr.r.logDir(s.pr.pod.Metadata.UID, s.c.Name), "current.log")
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.exited:
			return
		case <-t.C:
			bound(path, s.pr.r.cfg.MaxLogBytes)
		}
	}
}

// environ is the container's environment: a PATH that finds homeostat
// itself first (so the demo server runs as "homeostat demo"), the root its
// mounts are in, its ports (portEnv), the pod's variables (each may use
// those before it as $(NAME)), and the markers that let a restarted agent
// find the process.
func (s *supervisor) environ(restarts int32) []string {
	path := os.Getenv("PATH")
	if exe, err := os.Executable(); err == nil {
		path = filepath.Dir(exe) + string(os.PathListSeparator) + path
	}
	pod := s.pr.pod
	env := []string{"PATH=" + path, "HOME=/tmp", "HOSTNAME=" + pod.Metadata.Name,
		"POD_NAME=" + pod.Metadata.Name, "POD_NAMESPACE=" + pod.Metadata.Namespace}
	if len(s.c.VolumeMounts) > 0 {
		env = append(env, envRoot+"="+s.pr.r.rootDir(pod.Metadata.UID, s.c.Name))
	}
	env = append(env, portEnv(s.c.Ports)...)
	for _, e := range s.c.Env {
		env = append(env, e.Name+"="+expand(e.Value, envLookup(env)))
	}
	return append(env, envNode+"="+s.pr.r.cfg.Node, envAgent+"="+s.pr.r.cfg.Agent, envPodUID+"="+pod.Metadata.UID,
		envContainer+"="+s.c.Name, envRestarts+"="+strconv.Itoa(int(restarts)))
}

// lookPath resolves a command with the container's PATH, not the agent's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, e := range env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			for _, dir := range filepath.SplitList(p) {
				full := filepath.Join(dir, name)
				if st, err := os.Stat(full); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return full, nil
				}
			}
		}
	}
	return exec.LookPath(name)
}
