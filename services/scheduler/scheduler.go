// Package scheduler binds pods to nodes. It watches unbound pods, filters
// the nodes that can take each (resources, node selector and affinity,
// taints, pod anti-affinity, topology spread), scores the rest (least
// allocated, balanced, spread), and binds by compare-and-swap on the pod.
// A pod that fits nowhere gets PodScheduled=False with the reasons and is
// retried with backoff, or at once when nodes or pods change.
//
// Several scheduler processes may run; one holds the leadership lease and
// schedules, the others keep warm caches and take over when its lease
// lapses. One decider at a time, counting what it bound before its caches
// show it, is what keeps a node from being over-committed. The leader also
// keeps the per-node pod index that node agents watch.
package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// Config configures a scheduler.
type Config struct {
	Bus    *bus.Conn
	Logger *slog.Logger
	// Identity names this replica in the lease, the same across its
	// restarts so that a restarted leader takes its lease back at once;
	// the host name by default.
	Identity string
	// LeaseTTL is how long leadership lasts unrenewed (default 15s).
	LeaseTTL time.Duration
	// Binders bind in parallel (default 128). A bind waits one round trip
	// to the pods stream's leader, several milliseconds when the bus is
	// busy, so the binders in flight, not the decisions, bound how fast
	// pods are bound; Kubernetes' scheduler binds each pod in a goroutine
	// of its own.
	Binders int
	// MaxScored caps how many feasible nodes are scored per pod (default
	// 100): beyond that, more nodes rarely change the choice.
	MaxScored int
}

// LeaseKey is the leadership lease.
const LeaseKey = "scheduler"

// byNode indexes pods by the node they are bound to.
const byNode = "node"

// Service is one scheduler replica.
type Service struct {
	cfg    Config
	log    *slog.Logger
	reg    *schemas.Registry
	cache  *cache
	queue  *queue
	mgr    *reconcile.Manager
	pods   *reconcile.Informer
	nodes  *reconcile.Informer
	index  *bus.NodePods
	events *reconcile.Recorder
	leases *bus.Leases
	router *router
	// statuses are the statuses binds write, made once a second for the
	// status the pods came with.
	statuses scheduledStatuses

	mu     sync.Mutex
	leader bool
	offset int
}

// New checks the configuration.
func New(cfg Config) (*Service, error) {
	if cfg.Bus == nil {
		return nil, errors.New("scheduler: Config.Bus is required")
	}
	if cfg.Identity == "" {
		cfg.Identity, _ = os.Hostname()
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 15 * time.Second
	}
	if cfg.Binders == 0 {
		cfg.Binders = 128
	}
	if cfg.MaxScored == 0 {
		cfg.MaxScored = 100
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	reg, err := schemas.New()
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, log: log.With("scheduler", cfg.Identity), reg: reg, cache: newCache(), queue: newQueue()}, nil
}

// Ready is closed once the replica's caches have synced (nil before it has
// started).
func (s *Service) Ready() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mgr == nil {
		return nil
	}
	return s.mgr.Ready()
}

// Leader reports whether this replica holds the lease.
func (s *Service) Leader() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leader
}

func (s *Service) setup(ctx context.Context) error {
	mgr, err := reconcile.NewManager(ctx, reconcile.ManagerOptions{Bus: s.cfg.Bus, Logger: s.log})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.mgr = mgr
	s.mu.Unlock()
	s.pods = mgr.Informer(reconcile.KindOf(s.reg.MustLookup("", "pods")))
	s.nodes = mgr.Informer(reconcile.KindOf(s.reg.MustLookup("", "nodes")))
	if s.events, err = mgr.Recorder(ctx, "scheduler"); err != nil {
		return err
	}
	if s.index, err = s.cfg.Bus.NodePods(ctx); err != nil {
		return err
	}
	if s.leases, err = s.cfg.Bus.Leases(ctx); err != nil {
		return err
	}
	derived := func(node string) bool {
		n, _ := s.nodes.Get(node)
		return kinds.DerivesPods(n)
	}
	read := func(ctx context.Context, key string) (*object.Object, error) { return s.pods.Store().Get(ctx, key) }
	s.router = newRouter(s.index, derived, read, s.log)
	s.pods.SetKeep(kinds.KeepPods(func(o *object.Object, p *kinds.Pod) *object.Object { return keptPod(o, p, derived) }))
	s.pods.SetDecoder(kinds.PodPhaseAfter)
	s.pods.AddValueIndex(byNode, kinds.BoundNodeIndex)
	s.pods.OnChange(s.onPod)
	s.nodes.OnChange(s.onNode)
	return nil
}

// keptPod is what the scheduler keeps of a pod: of one bound to a node
// that derives its pods, its status's phase alone (kinds.PhaseOnly),
// since the scheduler never writes a bound pod and learns from its status
// only that it finished. A node that reads the node pod index gets its
// entries from the pods kept, and its agent writes its status over them,
// so those pods are kept whole; should one kept lean be written to the
// index after all (its node came to read it), the router reads it whole.
// p is o as decoded (nil when it was not), whose node and phase are read
// instead of o's JSON.
func keptPod(o *object.Object, p *kinds.Pod, derived func(node string) bool) *object.Object {
	if n := kinds.BoundNodeOf(o, p); n == "" || !derived(n) {
		return o
	}
	return kinds.PhaseOnlyOf(o, p)
}

func unbound(p *kinds.Pod) bool {
	return p.Spec.NodeName == "" && !p.Metadata.Deleting() && !p.Terminal() &&
		(p.Spec.SchedulerName == "" || p.Spec.SchedulerName == "default-scheduler")
}

func (s *Service) onPod(ch reconcile.Change) {
	key := ch.Object().Key()
	if ch.New == nil {
		s.cache.setPod(key, nil)
		s.queue.remove(key)
		s.queue.flushParked()
		s.router.change(ch)
		return
	}
	p, ok := ch.NewValue.(*kinds.Pod)
	if !ok {
		return
	}
	s.cache.setPod(key, p)
	s.router.change(ch)
	switch {
	case unbound(p):
		// Our own status writes (PodScheduled=False) change only status.
		if ch.Old == nil || ch.Old.Metadata.Generation != ch.New.Metadata.Generation || !maps.Equal(ch.Old.Metadata.Labels, ch.New.Metadata.Labels) {
			s.queue.add(key, ch.Trace)
		}
	default:
		s.queue.remove(key)
		if ch.Old != nil && p.Terminal() {
			s.queue.flushParked() // resources freed
		}
	}
}

func (s *Service) onNode(ch reconcile.Change) {
	s.router.nodeChanged(ch, func(node string) []*object.Object { return s.pods.ByIndex(byNode, node) })
	if ch.New == nil {
		s.cache.removeNode(ch.Old.Metadata.Name)
		return
	}
	s.cache.setNode(ch.New)
	s.queue.flushParked()
}

// Run runs the replica until ctx ends: caches always, scheduling and the
// node pod index while it leads.
// Stopping by ctx is not an error, whatever it interrupts.
func (s *Service) Run(ctx context.Context) error {
	err := s.run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *Service) run(ctx context.Context) error {
	if err := s.setup(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mgrErr := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); mgrErr <- s.mgr.Run(ctx) }()
	select {
	case <-s.mgr.Ready():
	case err := <-mgrErr:
		return err
	case <-ctx.Done():
		return nil
	}
	changes, err := s.leases.Watch(ctx, LeaseKey)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		lease, err := s.leases.Acquire(ctx, LeaseKey, s.cfg.Identity, s.cfg.LeaseTTL)
		if err == nil {
			s.lead(ctx, lease)
			continue
		}
		if !errors.Is(err, bus.ErrAlreadyExists) {
			s.log.Warn("acquiring the scheduler lease", "err", err)
		}
		s.standBy(ctx, changes)
	}
	cancel()
	return <-mgrErr
}

// standBy waits until the lease may be free: it changed (expired, released
// or renewed), or a second passed. Taking over is then a matter of the
// server noticing the holder's lease run out.
func (s *Service) standBy(ctx context.Context, changes <-chan bus.LeaseEvent) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-changes:
	case <-t.C:
	}
}

// lead schedules while the lease holds. It renews at a third of the TTL
// and steps down before the TTL could have run out since the last renewal,
// so a replica that cannot reach the bus stops deciding before another
// can start.
func (s *Service) lead(ctx context.Context, lease *bus.Lease) {
	s.log.Info("leading: scheduling pods")
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	s.mu.Lock()
	s.leader = true
	s.mu.Unlock()
	binds := make(chan bindJob, s.cfg.Binders)
	for range s.cfg.Binders {
		wg.Add(1)
		go func() { defer wg.Done(); s.binder(lctx, binds) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); s.loop(lctx, binds) }()
	go func() { defer wg.Done(); s.router.run(lctx, s.pods) }()
	renewed := time.Now()
	for {
		if !clock.Sleep(ctx, s.cfg.LeaseTTL/3) {
			break
		}
		next, err := s.leases.Renew(ctx, lease, s.cfg.LeaseTTL)
		if err == nil {
			lease, renewed = next, time.Now()
			continue
		}
		s.log.Warn("renewing the scheduler lease", "err", err)
		if errors.Is(err, bus.ErrConflict) || time.Since(renewed) > s.cfg.LeaseTTL*2/3 {
			break
		}
	}
	cancel()
	wg.Wait()
	s.mu.Lock()
	s.leader = false
	s.mu.Unlock()
	if ctx.Err() != nil {
		_ = s.leases.Release(context.WithoutCancel(ctx), lease)
	}
	s.log.Info("stepped down")
}
