// Package controllers runs Homeostat's workload controllers on the
// reconcile runtime: ReplicaSet, Deployment, Job, DaemonSet, the garbage
// collector (owner references, deletion propagation) and the Namespace
// controller. Any number of processes may run them over one bus; the work
// queues split the keys among them.
package controllers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/fieldmanager"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// Config configures the controllers.
type Config struct {
	Bus    *bus.Conn
	Logger *slog.Logger
	// Workers per controller in this process (default 4).
	Workers int
	// Backoff after errors (default reconcile.DefaultBackoff).
	Backoff reconcile.Backoff
	// Resync period (default 5 minutes).
	Resync time.Duration
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
	// NodeGrace: a node whose heartbeat is older is marked unreachable
	// (default 40s). EvictAfter: its pods are then deleted this long after
	// (default 5m).
	NodeGrace  time.Duration
	EvictAfter time.Duration
	// Identity names this process in the claims that keep a Deployment or
	// a Job in one process at a time; give one that survives restarts so
	// that a restarted process takes its claims back at once (default: a
	// new one each start).
	Identity string
	// NoHistory: the reconciles leave no history (reconcile.ManagerOptions).
	NoHistory bool
	// JobBackoff is the first delay before a Job replaces a failed pod; it
	// doubles per failure up to six minutes (default 10s).
	JobBackoff time.Duration
}

// The controllers' work queues, one each.
const (
	queueReplicaSets   = "replicaset"
	queueDeployments   = "deployment"
	queueJobs          = "job"
	queueDaemonSets    = "daemonset"
	queueGC            = "garbage-collector"
	queueNodeLifecycle = "node-lifecycle"
	queueNamespaces    = "namespace"
	queueEndpoints     = "endpointslice"
)

// Queues are the work queues the controllers consume: the API creates
// them, since the controllers' credentials may not create streams.
var Queues = []string{queueReplicaSets, queueDeployments, queueJobs, queueDaemonSets, queueGC, queueNodeLifecycle, queueNamespaces, queueEndpoints}

// Owners are, by resource, the controllers that reconcile it: the queues
// that explain reads an object's state in.
var Owners = map[string][]string{
	"deployments.apps": {queueDeployments}, "replicasets.apps": {queueReplicaSets}, "jobs.batch": {queueJobs},
	"daemonsets.apps": {queueDaemonSets}, "namespaces": {queueNamespaces}, "nodes": {queueNodeLifecycle},
	"services": {queueEndpoints},
}

// FieldManager is the controllers' field manager: their writes are
// recorded under it in objects' managedFields, as kube-controller-manager's
// are in Kubernetes.
const FieldManager = "homeostat-controllers"

// Service is the controllers of one process.
type Service struct {
	cfg Config
	reg *schemas.Registry
	log *slog.Logger
	// mgrReady is the manager once set up, for Ready from other goroutines.
	mgrReady atomic.Pointer[reconcile.Manager]
	mgr      *reconcile.Manager
	gc       *garbageCollector
	nl       *nodeLifecycle
}

// New checks the configuration.
func New(cfg Config) (*Service, error) {
	if cfg.Bus == nil {
		return nil, errors.New("controllers: Config.Bus is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	reg, err := schemas.New()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Service{cfg: cfg, reg: reg, log: log}, nil
}

// Ready is closed once the controllers have synced their caches and started.
func (s *Service) Ready() <-chan struct{} {
	if m := s.mgrReady.Load(); m != nil {
		return m.Ready()
	}
	return nil
}

func (s *Service) kind(group, plural string) reconcile.Kind {
	return reconcile.KindOf(s.reg.MustLookup(group, plural))
}

// Setup builds the manager and registers every controller; Run calls it
// when it has not been called.
func (s *Service) Setup(ctx context.Context) error {
	if s.mgr != nil {
		return nil
	}
	mgr, err := reconcile.NewManager(ctx, reconcile.ManagerOptions{Bus: s.cfg.Bus, Logger: s.log, Identity: s.cfg.Identity, NoHistory: s.cfg.NoHistory})
	if err != nil {
		return err
	}
	s.mgr = mgr
	s.mgrReady.Store(mgr)
	pods := mgr.Informer(s.kind("", "pods"))
	pods.SetDecoder(kinds.PodAfter)
	// What the controllers read of a pod's status is in its decoded form:
	// the cache lets go of the JSON, three quarters of a running pod's
	// stored status, and a write reads the pod whole (stored).
	pods.SetKeep(kinds.KeepPods(kinds.PhaseOnlyOf))
	pods.AddIndex(byOwner, ownerIndex)
	pods.AddIndex(byOrphan, orphanIndex)
	rsInf := mgr.Informer(s.kind("apps", "replicasets"))
	rsInf.AddIndex(byNamespace, namespaceIndex)
	rsInf.AddIndex(byOwner, ownerIndex)
	rsInf.AddIndex(byOrphan, orphanIndex)
	for _, setup := range []func(context.Context) error{s.setupReplicaSets, s.setupDeployments, s.setupJobs,
		s.setupDaemonSets, s.setupGC, s.setupNamespaces, s.setupNodeLifecycle, s.setupEndpoints} {
		if err := setup(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) options(name string, k reconcile.Kind, r reconcile.Reconciler) reconcile.Options {
	return reconcile.Options{Name: name, For: k, Reconciler: r, Workers: s.cfg.Workers, Backoff: s.cfg.Backoff, Resync: s.cfg.Resync}
}

func (s *Service) setupReplicaSets(ctx context.Context) error {
	rsKind := s.kind("apps", "replicasets")
	pods := s.mgr.Informer(s.kind("", "pods"))
	ev, err := s.mgr.Recorder(ctx, "replicaset-controller")
	if err != nil {
		return err
	}
	r := &replicaSets{rs: s.mgr.Informer(rsKind), pods: pods, events: ev, now: s.cfg.Now}
	ctrl, err := s.mgr.Add(ctx, s.options(queueReplicaSets, rsKind, r))
	if err != nil {
		return err
	}
	pods.OnChange(enqueueOwner(ctrl, "ReplicaSet", pods.Kind().Resource, podChanged))
	pods.OnChange(adoptOrphans(ctrl, r.rs, pods.Kind().Resource, "ReplicaSet"))
	return nil
}

func (s *Service) setupDeployments(ctx context.Context) error {
	dKind := s.kind("apps", "deployments")
	rs := s.mgr.Informer(s.kind("apps", "replicasets"))
	deploys := s.mgr.Informer(dKind)
	deploys.AddIndex(byNamespace, namespaceIndex)
	ev, err := s.mgr.Recorder(ctx, "deployment-controller")
	if err != nil {
		return err
	}
	d := &deployments{deploys: deploys, rs: rs, events: ev, now: s.cfg.Now}
	opts := s.options(queueDeployments, dKind, d)
	// A Deployment grows one ReplicaSet on the count of the others.
	opts.Exclusive = true
	ctrl, err := s.mgr.Add(ctx, opts)
	if err != nil {
		return err
	}
	rs.OnChange(enqueueOwner(ctrl, "Deployment", rs.Kind().Resource, nil))
	rs.OnChange(adoptOrphans(ctrl, deploys, rs.Kind().Resource, "Deployment"))
	return nil
}

// adoptOrphans enqueues the owners whose selector matches a pod that has no
// controller, so that they adopt it.
func adoptOrphans(ctrl *reconcile.Controller, owners *reconcile.Informer, bucket, kind string) func(reconcile.Change) {
	return func(ch reconcile.Change) {
		o := ch.New
		if o == nil || len(o.Metadata.Labels) == 0 {
			return
		}
		if _, controlled := o.Metadata.ControllerOf(); controlled {
			return
		}
		for _, owner := range owners.ByIndex(byNamespace, o.Metadata.Namespace) {
			var spec struct {
				Selector *object.LabelSelector `json:"selector"`
			}
			if owner.DecodeSpec(&spec) != nil {
				continue
			}
			if sel, err := spec.Selector.Selector(); err == nil && sel.Matches(o.Metadata.Labels) {
				ctrl.Enqueue(owner.Key(), &ch, bucket)
			}
		}
		_ = kind
	}
}

// Run runs the controllers until ctx ends; stopping by ctx is not an
// error, whatever it interrupts.
func (s *Service) Run(ctx context.Context) error {
	fields := fieldmanager.New(openapi.NewCache(s.reg))
	// Made now, the types are not made by the first write, which would
	// wait tens of milliseconds for them.
	if err := fields.Warm(); err != nil {
		s.log.Warn("the field managers' types could not be made; each write tries again", "err", err)
	}
	ctx = bus.WithWriter(ctx, bus.Writer{Manager: FieldManager, Fields: fields})
	err := s.run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *Service) run(ctx context.Context) error {
	if err := s.Setup(ctx); err != nil {
		return err
	}
	leases, err := s.cfg.Bus.Leases(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		select {
		case <-s.mgr.Ready():
			s.gc.followCustomKinds(ctx)
		case <-ctx.Done():
		}
	}()
	go func() {
		defer wg.Done()
		select {
		case <-s.mgr.Ready():
			s.gc.sweep(ctx, s.resync())
		case <-ctx.Done():
		}
	}()
	go func() { defer wg.Done(); s.nl.watchLeases(ctx, leases) }()
	err = s.mgr.Run(ctx)
	wg.Wait()
	return err
}

func (s *Service) resync() time.Duration {
	if s.cfg.Resync > 0 {
		return s.cfg.Resync
	}
	return 5 * time.Minute
}

func (s *Service) setupJobs(ctx context.Context) error {
	jKind := s.kind("batch", "jobs")
	pods := s.mgr.Informer(s.kind("", "pods"))
	ev, err := s.mgr.Recorder(ctx, "job-controller")
	if err != nil {
		return err
	}
	j := &jobs{jobs: s.mgr.Informer(jKind), pods: pods, events: ev, now: s.cfg.Now, backoff: s.cfg.JobBackoff}
	if j.backoff == 0 {
		j.backoff = 10 * time.Second
	}
	opts := s.options(queueJobs, jKind, j)
	// A Job decides how many pods to start on the count of the others.
	opts.Exclusive = true
	ctrl, err := s.mgr.Add(ctx, opts)
	if err != nil {
		return err
	}
	pods.OnChange(enqueueOwner(ctrl, "Job", pods.Kind().Resource, podChanged))
	return nil
}

func (s *Service) setupDaemonSets(ctx context.Context) error {
	dsKind := s.kind("apps", "daemonsets")
	pods := s.mgr.Informer(s.kind("", "pods"))
	nodes := s.mgr.Informer(s.kind("", "nodes"))
	ev, err := s.mgr.Recorder(ctx, "daemonset-controller")
	if err != nil {
		return err
	}
	ds := &daemonSets{ds: s.mgr.Informer(dsKind), pods: pods, nodes: nodes, events: ev, now: s.cfg.Now}
	ctrl, err := s.mgr.Add(ctx, s.options(queueDaemonSets, dsKind, ds))
	if err != nil {
		return err
	}
	pods.OnChange(enqueueOwner(ctrl, "DaemonSet", pods.Kind().Resource, podChanged))
	nodes.OnChange(func(ch reconcile.Change) {
		if ch.Old != nil && ch.New != nil && !nodeChanged(ch.Old, ch.New) {
			return
		}
		for _, k := range ds.ds.Keys() {
			ctrl.Enqueue(k, &ch, nodes.Kind().Resource)
		}
	})
	return nil
}

// nodeChanged reports node changes that can change where daemons run.
func nodeChanged(old, new *object.Object) bool {
	return !object.SameJSON(old.Spec, new.Spec) || !object.SameJSON(mustJSON(old.Metadata.Labels), mustJSON(new.Metadata.Labels))
}

func (s *Service) setupGC(ctx context.Context) error {
	g := &garbageCollector{bus: s.cfg.Bus, reg: s.reg, infs: map[string]*reconcile.Informer{}, custom: map[string]string{}, log: s.log}
	for _, gr := range [][2]string{{"", "pods"}, {"apps", "replicasets"}, {"apps", "deployments"}, {"apps", "daemonsets"}, {"batch", "jobs"},
		{"", "serviceaccounts"}, {"homeostat.io", "tokens"}, {"discovery.k8s.io", "endpointslices"}} {
		inf := s.mgr.Informer(s.kind(gr[0], gr[1]))
		inf.AddIndex(byOwnerUID, ownerUIDIndex)
		g.infs[inf.Kind().Resource] = inf
	}
	opts := s.options(queueGC, reconcile.Kind{}, g)
	opts.NoSource = true
	ctrl, err := s.mgr.Add(ctx, opts)
	if err != nil {
		return err
	}
	g.ctrl = ctrl
	for _, inf := range g.infs {
		g.watch(inf)
	}
	s.gc = g
	return nil
}

func (s *Service) setupNodeLifecycle(ctx context.Context) error {
	nKind := s.kind("", "nodes")
	pods := s.mgr.Informer(s.kind("", "pods"))
	pods.AddValueIndex(byNode, kinds.BoundNodeIndex)
	ev, err := s.mgr.Recorder(ctx, "node-lifecycle-controller")
	if err != nil {
		return err
	}
	nl := &nodeLifecycle{nodes: s.mgr.Informer(nKind), pods: pods, events: ev, now: s.cfg.Now,
		grace: s.cfg.NodeGrace, evictAfter: s.cfg.EvictAfter, leases: map[string]*bus.Lease{}}
	if nl.grace == 0 {
		nl.grace = 40 * time.Second
	}
	if nl.evictAfter == 0 {
		nl.evictAfter = 5 * time.Minute
	}
	ctrl, err := s.mgr.Add(ctx, s.options(queueNodeLifecycle, nKind, nl))
	if err != nil {
		return err
	}
	nl.ctrl = ctrl
	s.nl = nl
	return nil
}

func (s *Service) setupEndpoints(ctx context.Context) error {
	svcKind := s.kind("", "services")
	svcs := s.mgr.Informer(svcKind)
	svcs.SetDecoder(reconcile.DecodeEach(kinds.ServiceSpecOrNil))
	svcs.AddIndex(byNamespace, namespaceIndex)
	pods := s.mgr.Informer(s.kind("", "pods"))
	pods.AddIndex(byNamespace, namespaceIndex)
	slices := s.mgr.Informer(s.kind("discovery.k8s.io", "endpointslices"))
	slices.AddIndex(byService, serviceIndex)
	ev, err := s.mgr.Recorder(ctx, "endpointslice-controller")
	if err != nil {
		return err
	}
	e := &endpoints{svcs: svcs, pods: pods, slices: slices, events: ev, now: s.cfg.Now}
	ctrl, err := s.mgr.Add(ctx, s.options(queueEndpoints, svcKind, e))
	if err != nil {
		return err
	}
	pods.OnChange(servicesOfPod(ctrl, svcs, pods.Kind().Resource))
	svcs.OnChange(sharingPorts(ctrl, svcs))
	// A slice changed or removed by anyone else is put back.
	slices.OnChange(func(ch reconcile.Change) {
		for _, k := range serviceIndex(ch.Object()) {
			ctrl.Enqueue(k, &ch, slices.Kind().Resource)
		}
	})
	return nil
}

func (s *Service) setupNamespaces(ctx context.Context) error {
	nsKind := s.kind("", "namespaces")
	n := &namespaces{ns: s.mgr.Informer(nsKind), bus: s.cfg.Bus, reg: s.reg, log: s.log}
	_, err := s.mgr.Add(ctx, s.options(queueNamespaces, nsKind, n))
	return err
}
