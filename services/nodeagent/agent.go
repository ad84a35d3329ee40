// Package nodeagent is the agent of a node: it registers the Node, renews
// its heartbeat lease, watches only the pods bound to it (through the
// per-node pod index), runs them with a Runtime — real processes, or
// simulated ones for scale tests — and writes their status back. Deleting a
// pod stops its containers within the grace period before the pod goes.
package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/fieldmanager"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

// Runtime runs the containers of pods. The agent declares it; the process
// and simulated runtimes implement it.
type Runtime interface {
	// Discover reports the pod UIDs whose containers survive from an
	// earlier run of this agent; Run adopts them.
	Discover(ctx context.Context) (map[string]bool, error)
	// Run keeps the pod's containers running per its restart policy and
	// probes until ctx ends or the pod finishes for good, calling report
	// with each new status (phase, container statuses, readiness). A
	// runtime with nothing to watch once its containers run (a simulated
	// one) may return then: its containers run until Stop.
	Run(ctx context.Context, pod *kinds.Pod, report func(kinds.PodStatus))
	// Stop stops a pod's containers: SIGTERM, then SIGKILL after grace.
	Stop(ctx context.Context, podUID string, grace time.Duration)
	// Cleanup stops the containers of every pod not in keep.
	Cleanup(ctx context.Context, keep map[string]bool)
	// LogPath is the file holding a container's output (its previous
	// instance's with previous).
	LogPath(podUID, container string, previous bool) (string, error)
	// Project writes a pod's volumes and its containers' mounts of them,
	// before Run and again each sync period, replacing each volume's
	// files at once, so that a reader sees the old set or the new.
	Project(pod *kinds.Pod, volumes []kinds.ProjectedVolume) error
}

// Routes is what the agent asks of its node's Service proxy.
type Routes interface {
	// Unrouted returns once the proxy sends the pod no new connection,
	// or ctx ends.
	Unrouted(ctx context.Context, podUID string)
	// Env is what a pod of namespace starting now is told of its
	// namespace's Services (NAME_SERVICE_HOST, ...).
	Env(ctx context.Context, namespace string) []kinds.EnvVar
}

// PodWriter writes what an agent may write of its node's pods: their
// status, and the removal of a pod being deleted once its containers have
// stopped. A real node's agent writes through the node relay
// (bus.NodeWriter), its credentials allowing nothing else; a host of
// simulated nodes, trusted with the store, writes directly.
type PodWriter interface {
	// UpdateStatus writes pod (current with a new status) over current's
	// revision: bus.ErrConflict when the pod has moved on.
	UpdateStatus(ctx context.Context, pod, current *object.Object) (*object.Object, error)
	// Remove deletes the pod at key if its uid is still uid.
	Remove(ctx context.Context, key, uid string) error
}

// Config configures one node's agent.
type Config struct {
	Bus *bus.Conn
	// Pods writes the node's pods; directly to the store when nil.
	Pods     PodWriter
	Logger   *slog.Logger
	NodeName string
	// Identity names this agent, stable across its restarts (the command
	// keeps it in its data directory): an agent with another identity is
	// refused the node name while this one's heartbeat is live, and a
	// restarted agent takes its own heartbeat back at once. Random when
	// empty.
	Identity string
	Runtime  Runtime
	// Capacity of the node (cpu, memory, pods); allocatable is the same.
	Capacity kinds.ResourceList
	Labels   map[string]string
	Taints   []kinds.Taint
	// Address is the node's IP, reported as the pods' IP too.
	Address string
	// AgentURL is where this agent serves logs.
	AgentURL string
	// HeartbeatEvery renews the lease (default 10s); Grace is its TTL, after
	// which the node is considered gone (default 40s).
	HeartbeatEvery time.Duration
	Grace          time.Duration
	// Resync checks that every running pod still exists (default 1m).
	Resync time.Duration
	// StatusEvery refreshes the Node's status and its conditions'
	// heartbeat time (default 1m); its Lease in kube-node-lease is renewed
	// with every heartbeat.
	StatusEvery time.Duration
	// ConfigSync is how often a pod's ConfigMaps and Secrets are fetched
	// again: a waiting pod tries again to start, a running one's volumes
	// are rewritten (default 10s).
	ConfigSync time.Duration
	// Config fetches what pods refer to; by default the Pods writer if it
	// can (the relay), else the store.
	Config ConfigSource
	// Heartbeats keeps the node's heartbeat lease; by default the Pods
	// writer if it can (the relay), else the bus's leases.
	Heartbeats Heartbeats
	// StopPodsOnExit stops every container when the agent stops; by default
	// they keep running and the next agent adopts them.
	StopPodsOnExit bool
	// Fields records the agent's writes in objects' managedFields under
	// bus.AgentManager; made from the built-in schemas when nil (agents
	// of one process may share one).
	Fields bus.FieldTracker
	// Index says which pods are bound to the node: the bus's node pod
	// index when nil (agents of one process may share one watch of every
	// pod instead).
	Index PodIndex
	// Routes, when set, is the node's Service proxy: a pod being stopped
	// is first taken out of its rotation (bounded by drainWait).
	Routes Routes
	// DerivesPods marks the Node as one whose Index derives its pods from
	// the store (kinds.AnnotationPodIndex), so that the scheduler writes
	// it no index entries: only for an Index that does.
	DerivesPods bool
	// Pace, when set, queues fn for one of a bounded set of workers that
	// agents of one process may share, and returns at once; it must run
	// every fn it is given, after its own stop too, since the pods'
	// workers wait for them. A status writer is one fn, from the reading
	// of what it writes over to the answer and its retries (their waits
	// included); a removal is one per try, and waits for it. Without Pace
	// a status writer runs on a goroutine of its own, a removal on its
	// pod's.
	Pace func(fn func())
}

// Agent is one node's agent.
type Agent struct {
	cfg   Config
	log   *slog.Logger
	pods  *bus.Store
	write PodWriter
	// read reads a pod again before writing over it (the pods store).
	read podReader
	// config fetches pods' ConfigMaps and Secrets.
	config ConfigSource
	// leaseObject is the node's Lease in kube-node-lease, and nodeUID its
	// Node's uid, which owns it; both the heartbeat's alone.
	leaseObject *nodeLease
	nodeUID     string
	nodes       *bus.Store
	index       PodIndex

	mu      sync.Mutex
	workers map[string]*podWorker // by pod key
}

// BuiltinFields is a field tracker of the built-in kinds, which are all an
// agent writes.
func BuiltinFields() (bus.FieldTracker, error) {
	reg, err := schemas.New()
	if err != nil {
		return nil, err
	}
	return fieldmanager.New(openapi.NewCache(reg)), nil
}

// New checks the configuration.
func New(cfg Config) (*Agent, error) {
	if cfg.Bus == nil || cfg.NodeName == "" || cfg.Runtime == nil {
		return nil, errors.New("nodeagent: Config needs Bus, NodeName and Runtime")
	}
	if cfg.HeartbeatEvery == 0 {
		cfg.HeartbeatEvery = 10 * time.Second
	}
	if cfg.Grace == 0 {
		cfg.Grace = 40 * time.Second
	}
	if cfg.Grace < time.Second || cfg.Grace > bus.MaxHeartbeatTTL {
		return nil, fmt.Errorf("nodeagent: %w: grace %s: must be from 1s to %s", bus.ErrInvalid, cfg.Grace, bus.MaxHeartbeatTTL)
	}
	// The node relay takes a node's heartbeats at a bounded rate.
	if cfg.HeartbeatEvery < bus.MinHeartbeatEvery {
		return nil, fmt.Errorf("nodeagent: %w: heartbeat every %s: must be at least %s", bus.ErrInvalid, cfg.HeartbeatEvery, bus.MinHeartbeatEvery)
	}
	if cfg.Resync == 0 {
		cfg.Resync = time.Minute
	}
	if cfg.StatusEvery == 0 {
		cfg.StatusEvery = time.Minute
	}
	if cfg.ConfigSync == 0 {
		cfg.ConfigSync = 10 * time.Second
	}
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1"
	}
	if cfg.Identity == "" {
		cfg.Identity = uuid.NewString()
	}
	if cfg.Fields == nil {
		fields, err := BuiltinFields()
		if err != nil {
			return nil, err
		}
		cfg.Fields = fields
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Agent{cfg: cfg, log: log.With("node", cfg.NodeName), workers: map[string]*podWorker{}}, nil
}

// goPaced runs fn through the agent's Pace, or on a goroutine of its own
// without one, and returns at once.
func (a *Agent) goPaced(fn func()) {
	if a.cfg.Pace == nil {
		go fn()
		return
	}
	a.cfg.Pace(fn)
}

// paced runs fn through the agent's Pace, if it has one, and returns
// once fn has.
func (a *Agent) paced(fn func()) {
	if a.cfg.Pace == nil {
		fn()
		return
	}
	done := make(chan struct{})
	a.cfg.Pace(func() { defer close(done); fn() })
	<-done
}

// Run registers the node and runs its pods until ctx ends. Pods keep
// running when the agent stops: a restarted agent adopts them. Stopping
// by ctx is not an error, whatever step it interrupts.
func (a *Agent) Run(ctx context.Context) error {
	ctx = bus.WithWriter(ctx, bus.Writer{Manager: bus.AgentManager, Fields: a.cfg.Fields})
	err := a.run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (a *Agent) run(ctx context.Context) error {
	var err error
	if a.pods, err = a.cfg.Bus.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true}); err != nil {
		return err
	}
	a.read = a.pods
	if a.write = a.cfg.Pods; a.write == nil {
		a.write = storeWriter{a.pods}
	}
	a.config = a.configSource()
	if a.nodes, err = a.cfg.Bus.Store(ctx, bus.StoreSpec{Resource: "nodes", Kind: "Node"}); err != nil {
		return err
	}
	if a.index = a.cfg.Index; a.index == nil {
		if a.index, err = a.cfg.Bus.NodePods(ctx); err != nil {
			return err
		}
	}
	leases, err := a.heartbeats(ctx)
	if err != nil {
		return err
	}
	leaseObjects, err := a.cfg.Bus.Store(ctx, bus.StoreSpec{Resource: "leases.coordination.k8s.io", Kind: "Lease", Namespaced: true})
	if err != nil {
		return err
	}
	a.leaseObject = &nodeLease{store: leaseObjects, node: a.cfg.NodeName}
	// A cluster may still be electing leaders: wait for it rather than fail.
	var lease *bus.Lease
	err = a.cfg.Bus.UntilAvailable(ctx, "the node's heartbeat", func(ctx context.Context) (err error) {
		lease, err = leases.Acquire(ctx, a.leaseKey(), a.cfg.Identity, a.cfg.Grace)
		return err
	})
	if errors.Is(err, bus.ErrAlreadyExists) {
		return fmt.Errorf("nodeagent: node %s is held by another live agent (%v); stop it, or give this one another node name: %w",
			a.cfg.NodeName, err, ErrNodeTaken)
	}
	if err != nil {
		return fmt.Errorf("nodeagent: first heartbeat: %w", err)
	}
	if err := a.cfg.Bus.UntilAvailable(ctx, "the node's registration", a.register); err != nil {
		return err
	}
	survivors, err := a.cfg.Runtime.Discover(ctx)
	if err != nil {
		a.log.Warn("discovering surviving containers", "err", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a.heartbeat(ctx, &wg, &beater{a: a, leases: leases, lease: lease, stop: cancel})
	wg.Go(func() { a.resync(ctx) })
	err = a.watch(ctx, survivors)
	if cause := context.Cause(ctx); errors.Is(cause, ErrNodeTaken) {
		err = cause
	}
	a.mu.Lock()
	ws := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		ws = append(ws, w)
	}
	a.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
	for _, w := range ws {
		w.wait()
	}
	if a.cfg.StopPodsOnExit {
		var swg sync.WaitGroup
		for _, w := range ws {
			swg.Add(1)
			go func() {
				defer swg.Done()
				w.mu.Lock()
				grace := time.Duration(kinds.Int64(w.spec.TerminationGracePeriodSeconds, 30)) * time.Second
				w.mu.Unlock()
				a.cfg.Runtime.Stop(context.WithoutCancel(ctx), w.uid(), grace)
			}()
		}
		swg.Wait()
	}
	return err
}

// configSource is Config's, else the pod writer if it can fetch (the
// relay), else the store.
func (a *Agent) configSource() ConfigSource {
	if a.cfg.Config != nil {
		return a.cfg.Config
	}
	if src, ok := a.write.(ConfigSource); ok {
		return src
	}
	return &lazyConfigReader{bus: a.cfg.Bus}
}

// markPodIndex says on the Node whether its pods are derived, removing
// the mark an agent of another kind may have left under the same name.
func (a *Agent) markPodIndex(n *object.Object) {
	if a.cfg.DerivesPods {
		if n.Metadata.Annotations == nil {
			n.Metadata.Annotations = map[string]string{}
		}
		n.Metadata.Annotations[kinds.AnnotationPodIndex] = kinds.PodIndexDerived
		return
	}
	delete(n.Metadata.Annotations, kinds.AnnotationPodIndex)
}

// register creates or refreshes the Node: labels and status are the
// agent's; spec (taints, unschedulable) is kept once others may have set it.
func (a *Agent) register(ctx context.Context) error {
	labels := map[string]string{
		"kubernetes.io/hostname": a.cfg.NodeName, "kubernetes.io/os": runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
	}
	for k, v := range a.cfg.Labels {
		labels[k] = v
	}
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := a.nodes.Get(ctx, a.cfg.NodeName)
		if errors.Is(err, bus.ErrNotFound) {
			n := &object.Object{APIVersion: "v1", Kind: "Node", Metadata: object.Meta{Name: a.cfg.NodeName, Labels: labels}}
			a.markPodIndex(n)
			if err := n.SetSpec(kinds.NodeSpec{Taints: a.cfg.Taints}); err != nil {
				return err
			}
			if err := n.SetStatus(a.nodeStatus(nil)); err != nil {
				return err
			}
			created, err := a.nodes.Create(ctx, n)
			if errors.Is(err, bus.ErrAlreadyExists) {
				continue
			}
			if err == nil {
				a.nodeUID = created.Metadata.UID
			}
			return err
		}
		if err != nil {
			return err
		}
		n := cur.Clone()
		if n.Metadata.Labels == nil {
			n.Metadata.Labels = map[string]string{}
		}
		for k, v := range labels {
			n.Metadata.Labels[k] = v
		}
		a.markPodIndex(n)
		var old kinds.NodeStatus
		_ = cur.DecodeStatus(&old)
		if err := n.SetStatus(a.nodeStatus(old.Conditions)); err != nil {
			return err
		}
		updated, err := a.nodes.Update(ctx, n, bus.UpdateOptions{Current: cur})
		if errors.Is(err, bus.ErrConflict) {
			continue
		}
		if err == nil {
			a.nodeUID = updated.Metadata.UID
		}
		return err
	}
	return bus.ErrConflict
}

// nodeStatus is what the agent reports of its node: capacity, addresses,
// and Ready, kept with the conditions others set (the node lifecycle
// controller's), its transition time kept while it holds, its heartbeat
// time now.
func (a *Agent) nodeStatus(conds []object.Condition) kinds.NodeStatus {
	now := time.Now().UTC().Truncate(time.Second)
	st := kinds.NodeStatus{
		Capacity: a.cfg.Capacity, Allocatable: a.cfg.Capacity,
		Addresses:       []kinds.NodeAddress{{Type: "InternalIP", Address: a.cfg.Address}, {Type: "Hostname", Address: a.cfg.NodeName}},
		DaemonEndpoints: &kinds.DaemonEndpoints{AgentURL: a.cfg.AgentURL},
		NodeInfo:        map[string]string{"operatingSystem": runtime.GOOS, "architecture": runtime.GOARCH, "runtime": fmt.Sprintf("%T", a.cfg.Runtime)},
		Conditions:      append([]object.Condition(nil), conds...),
	}
	object.SetCondition(&st.Conditions, object.Condition{Type: "Ready", Status: object.ConditionTrue, Reason: "AgentReady",
		Message: "node agent is posting ready status"}, now)
	object.FindCondition(st.Conditions, "Ready").LastHeartbeatTime = now
	return st
}

// podReader reads a pod's stored version.
type podReader interface {
	Get(ctx context.Context, key string) (*object.Object, error)
}

// storeWriter writes pods straight to the store.
type storeWriter struct{ pods *bus.Store }

func (w storeWriter) UpdateStatus(ctx context.Context, pod, current *object.Object) (*object.Object, error) {
	// A pod's status is the writes that come at the rate pods start: it
	// is not tracked (see bus.AgentManager), as the relay does not track
	// it either.
	return w.pods.Update(bus.WithWriter(ctx, bus.Writer{}), pod, bus.UpdateOptions{Current: current})
}

func (w storeWriter) Remove(ctx context.Context, key, uid string) error {
	zero := int64(0)
	_, _, err := w.pods.Delete(ctx, key, bus.DeleteOptions{UID: uid, GracePeriodSeconds: &zero})
	return err
}

// watch follows the node's pods: the index says which pods are bound here.
func (a *Agent) watch(ctx context.Context, survivors map[string]bool) error {
	for ctx.Err() == nil {
		ch, err := a.index.Watch(ctx, a.cfg.NodeName)
		if err != nil {
			a.log.Warn("watching the node's pods", "err", err)
			if !clock.Sleep(ctx, time.Second) {
				break
			}
			continue
		}
		synced := false
		listed := map[string]bool{}
		for ev := range ch {
			switch ev.Type {
			case bus.Synced:
				synced = true
				if survivors != nil {
					a.cfg.Runtime.Cleanup(ctx, a.desiredUIDs())
					survivors = nil
				}
				if a.cfg.DerivesPods {
					a.dropUnlisted(listed)
				}
				listed = nil
			case bus.Added, bus.Modified:
				if listed != nil {
					listed[ev.Key] = true
				}
				a.desire(ctx, ev, !synced)
			case bus.Deleted:
				a.gone(ctx, ev.Key)
			case bus.Failed:
				a.log.Warn("node pod watch", "err", ev.Err)
			}
		}
	}
	return nil
}

func (a *Agent) desiredUIDs() map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	keep := map[string]bool{}
	for _, w := range a.workers {
		keep[w.uid()] = true
	}
	return keep
}

// desire starts, or hands a new version to, the worker of a pod. A pod
// bound before this agent started (found by the initial listing) starts
// from its stored version, whose status says what ran before.
func (a *Agent) desire(ctx context.Context, ev bus.Event, earlier bool) {
	p, err := kinds.DecodePod(ev.Object)
	if err != nil {
		a.log.Warn("undecodable pod", "pod", ev.Key, "err", err)
		return
	}
	a.mu.Lock()
	running := a.workers[ev.Key] != nil
	a.mu.Unlock()
	// An index that derives pods from the store lists them as stored; the
	// bus's node pod index holds them as they were bound.
	if earlier && !running && !a.cfg.DerivesPods {
		if cur, err := a.pods.Get(ctx, ev.Key); err == nil && cur.Metadata.UID == p.Metadata.UID {
			if fresh, err := kinds.DecodePod(cur); err == nil {
				p = fresh
			}
		}
	}
	a.mu.Lock()
	w := a.workers[ev.Key]
	if w != nil && w.uid() != p.Metadata.UID {
		// A new pod of the same name: the old one is gone.
		w.remove()
		w = nil
	}
	if w == nil {
		w = newPodWorker(a, ev.Key, p, ev.Trace)
		a.workers[ev.Key] = w
		a.mu.Unlock()
		w.start(ctx)
		return
	}
	a.mu.Unlock()
	w.update(p)
}

// gone stops a pod that left the node or was deleted outright.
func (a *Agent) gone(_ context.Context, key string) {
	a.mu.Lock()
	w := a.workers[key]
	a.mu.Unlock()
	if w != nil {
		w.remove()
	}
}

func (a *Agent) forget(key string, w *podWorker) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workers[key] == w {
		delete(a.workers, key)
	}
}

// dropUnlisted stops the pods of an index that derives them from the
// store which its listing, made as its watch began again, left out: they
// went while it did not watch.
func (a *Agent) dropUnlisted(listed map[string]bool) {
	a.mu.Lock()
	var gone []*podWorker
	for key, w := range a.workers {
		if !listed[key] {
			gone = append(gone, w)
		}
	}
	a.mu.Unlock()
	for _, w := range gone {
		a.log.Info("stopping a pod that no longer exists", "pod", w.key)
		w.remove()
	}
}

// resync stops pods that no longer exist in the store, a safety net for a
// removal the node pod index missed. An index that derives the pods from
// the store has none to miss: its listing, each time its watch begins,
// says which pods exist (dropUnlisted), so its nodes make no reads. They
// were a read of every pod each Resync: on a host of 100,000 pods, 1,700
// a second, each loading a block of the store into the server's memory.
func (a *Agent) resync(ctx context.Context) {
	if a.cfg.DerivesPods {
		return
	}
	for clock.Sleep(ctx, a.cfg.Resync) {
		a.mu.Lock()
		ws := make([]*podWorker, 0, len(a.workers))
		for _, w := range a.workers {
			ws = append(ws, w)
		}
		a.mu.Unlock()
		for _, w := range ws {
			o, err := a.pods.Get(ctx, w.key)
			if errors.Is(err, bus.ErrNotFound) || (err == nil && o.Metadata.UID != w.uid()) {
				a.log.Info("stopping a pod that no longer exists", "pod", w.key)
				w.remove()
			}
		}
	}
}

// LogPath finds a container's log file for the logs endpoint.
func (a *Agent) LogPath(namespace, pod, container string, previous bool) (string, error) {
	a.mu.Lock()
	w := a.workers[object.Key(namespace, pod)]
	a.mu.Unlock()
	if w == nil {
		return "", fmt.Errorf("pod %s/%s is not running on node %s", namespace, pod, a.cfg.NodeName)
	}
	if container == "" {
		container = w.firstContainer()
	}
	return a.cfg.Runtime.LogPath(w.uid(), container, previous)
}

// Node is the agent's node name.
func (a *Agent) Node() string { return a.cfg.NodeName }
