package nodeagent

import (
	"context"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// podRun starts a pod's containers once what the pod refers to can be
// had, and keeps its volumes current while they run. A pod that refers
// to no ConfigMap or Secret starts at once and is never synced.
type podRun struct {
	w *podWorker
	// obj and spec are the pod's as its loop started, which every start
	// and sync reads, as a kubelet runs a pod from the spec it admitted.
	obj  *object.Object
	spec *kinds.PodSpec
	// sync signals the worker each sync period, when the pod needs
	// syncing (nil otherwise); nextSync sets it again.
	sync *time.Timer
	// exited is done when the runtime's Run, once started, returns (a
	// wait group, not a channel: 16 bytes in place, not 96 more for each
	// of a host's pods).
	exited sync.WaitGroup
	// cancel ends the containers' Run while it runs, nil before and after
	// (w.mu): a simulated pod's Run returns at once, and an idle pod then
	// holds no context of its own. Kept, they were 14 MB of a host of
	// 100,000 pods.
	cancel  context.CancelFunc
	running bool
}

func newPodRun(w *podWorker, obj *object.Object, spec *kinds.PodSpec) *podRun {
	r := &podRun{w: w, obj: obj, spec: spec}
	if needsConfig(spec) {
		r.sync = time.AfterFunc(w.a.cfg.ConfigSync, func() { w.signal(sigSync) })
	}
	return r
}

// nextSync sets the sync for the next period, once one has been acted on.
func (r *podRun) nextSync() {
	if r.sync != nil {
		r.sync.Reset(r.w.a.cfg.ConfigSync)
	}
}

// start fetches the pod's configuration, writes its volumes and, the
// first time that succeeds, starts its containers; a running pod only
// has its volumes rewritten. What is missing is reported as the
// containers' CreateContainerConfigError, and tried again next period.
func (r *podRun) start(ctx context.Context) {
	a := r.w.a
	// Made for this start, not kept: the pod's status is the one it came
	// with until the containers start, for the runtime to adopt from.
	pod := &kinds.Pod{Object: r.obj, Spec: r.spec, Status: r.w.arrivalStatus()}
	p := &prepared{pod: pod}
	if r.sync != nil || len(pod.Spec.Volumes) > 0 {
		var cfg *bus.PodConfig
		var err error
		if r.sync != nil {
			cfg, err = a.config.PodConfig(ctx, pod.Object)
		}
		if err == nil {
			p, err = prepare(pod, cfg, a.cfg.Address)
		}
		if err != nil {
			if isConfigError(err) && !r.running {
				r.w.report(configErrorStatus(pod, err.Error()))
			} else if ctx.Err() == nil {
				a.log.Warn("fetching a pod's configuration", "pod", r.w.key, "err", err)
			}
			return
		}
	}
	if len(pod.Spec.Volumes) > 0 {
		if err := a.cfg.Runtime.Project(p.pod, p.volumes); err != nil {
			a.log.Warn("writing a pod's volumes", "pod", r.w.key, "err", err)
			if !r.running {
				r.w.report(configErrorStatus(pod, "writing the volumes: "+err.Error()))
				return
			}
		}
	}
	if r.running {
		return
	}
	r.running = true
	runCtx, cancel := context.WithCancel(ctx)
	r.w.mu.Lock()
	r.cancel = cancel
	r.w.mu.Unlock()
	if a.cfg.Routes != nil {
		p.pod = withEnv(p.pod, a.cfg.Routes.Env(runCtx, pod.Metadata.Namespace))
	}
	r.exited.Go(func() {
		a.cfg.Runtime.Run(runCtx, p.pod, r.w.report)
		r.w.mu.Lock()
		r.cancel = nil
		r.w.mu.Unlock()
		cancel()
	})
	// The runtime has what it started from. The worker lets go of the
	// status the pod came with, which only a start reads (to adopt what
	// runs); the first write reads it through storedStatus until it is
	// made. Decoded, it was 20 MB of a host of 100,000.
	r.w.containersStarted()
}

// stop ends the containers' Run, if it runs.
func (r *podRun) stop() {
	r.w.mu.Lock()
	cancel := r.cancel
	r.w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// wait returns once the containers' Run has, if they ever started.
func (r *podRun) wait() { r.exited.Wait() }

// stopSync ends the syncs.
func (r *podRun) stopSync() {
	if r.sync != nil {
		r.sync.Stop()
	}
}

// withEnv gives every container of the pod env before its own variables,
// which win over them.
func withEnv(p *kinds.Pod, env []kinds.EnvVar) *kinds.Pod {
	if len(env) == 0 {
		return p
	}
	out, _ := withContainers(p, func(c *kinds.Container) error {
		c.Env = append(append([]kinds.EnvVar(nil), env...), c.Env...)
		return nil
	})
	return out
}

// withContainers is p with each of its containers, init ones first, as
// change leaves a copy of it. A decoded pod's spec and containers are
// shared, so the pod, its spec and its lists of containers are copies.
func withContainers(p *kinds.Pod, change func(*kinds.Container) error) (*kinds.Pod, error) {
	spec := *p.Spec
	for _, list := range []*kinds.Containers{&spec.InitContainers, &spec.Containers} {
		cs := append([]kinds.Container(nil), (*list)...)
		for i := range cs {
			if err := change(&cs[i]); err != nil {
				return nil, err
			}
		}
		*list = cs
	}
	return &kinds.Pod{Object: p.Object, Spec: &spec, Status: p.Status}, nil
}
