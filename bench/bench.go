// Package bench measures how fast Homeostat converges at scale on simulated
// nodes: the time until every pod of a workload is Running, pods per
// second, the latency from a pod's creation to Running, each component's
// peak memory, and — measured in the same run on the same bus — the
// store's own write ceiling, against which the throughput is judged.
package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// Config describes one scenario.
type Config struct {
	// Exe is the homeostat binary; each component runs as its own process
	// so that its memory can be measured.
	Exe string
	// Nodes is the number of simulated nodes.
	Nodes int
	// Deployments of Replicas each.
	Deployments int
	Replicas    int
	// Timeout bounds the wait for convergence.
	Timeout time.Duration
	// Dir holds the store and the components' logs; a temporary one when empty.
	Dir string
	// Progress receives a line now and then; nil for none.
	Progress func(format string, args ...any)
	// CPUProfile, when set, is a directory where each component writes a
	// CPU profile of the scenario (<component>-<pid>.prof).
	CPUProfile string
	// NoHistory runs the controllers without their reconcile history, to
	// measure what it costs.
	NoHistory bool
	// ViaAPI runs the API as a component too, secured as by default, and
	// creates the Deployments through it from 32 clients instead of
	// writing them to the store.
	ViaAPI bool
	// APIProbes, with ViaAPI, measures the API itself once the pods run:
	// a list of them all, paced creates, and delivery to many watchers.
	APIProbes bool
	// Probe sizes the API probes; zero fields take DefaultProbe's.
	Probe Probe
	// Controllers and Schedulers are how many processes of each run (1
	// when 0): controllers share the work, schedulers beyond the first
	// stand by.
	Controllers, Schedulers int
}

// Result is what a scenario measured.
type Result struct {
	Scenario   string
	Pods       int
	Nodes      int
	Elapsed    time.Duration // from the first create to the last pod Running
	PodsPerSec float64
	P50, P99   time.Duration // pod created -> Running
	// Stages say where a pod's time went: the last pod created, bound
	// and Running, from the first create, and each step's latency.
	Stages Stages
	// CeilingWrites is the store's write ceiling (async publishes with a
	// revision check, per second) and CeilingPods that divided by the three
	// writes a pod needs at least (create, bind, status).
	CeilingWrites float64
	CeilingPods   float64
	// Ratio is PodsPerSec / CeilingPods.
	Ratio float64
	// PeakRSS is each component's peak resident memory in bytes.
	PeakRSS map[string]int64
	// WritesPerPod are the store's writes during the scenario per pod
	// started, by stream (bus.Conn.Writes), and their sum.
	WritesPerPod      map[string]float64
	TotalWritesPerPod float64
	// WritesByWriter split them by the component that made them (by its
	// own count, from its metrics), then by stream; a component whose
	// count could not be read is missing. Uncounted is what the streams
	// took that no component counted, per pod.
	WritesByWriter map[string]map[string]float64
	Uncounted      float64
	// WriteShare is the scenario's write rate as a share of the ceiling.
	WriteShare float64
	// ViaAPI says the Deployments were created through the API.
	ViaAPI bool
	// API is what the API probes measured (Config.APIProbes), or nil.
	API *APIResult
	// Work is each component's CPU and reconciles from the first create
	// to the last pod Running.
	Work []Work
	// MachineBusy is the share of the machine's cores busy over the same
	// time (0 where /proc/stat cannot be read).
	MachineBusy float64
}

// selfName names the bench's own process: its watch of every pod, and
// the API probes' clients.
const selfName = "bench (its watch and clients)"

// Run runs one scenario from an empty store.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Exe == "" || cfg.Nodes <= 0 || cfg.Deployments <= 0 || cfg.Replicas <= 0 {
		return nil, errors.New("bench: Config needs Exe, Nodes, Deployments and Replicas")
	}
	sc := scenario{cfg: cfg, dir: cfg.Dir, progress: cfg.Progress}
	if sc.progress == nil {
		sc.progress = func(string, ...any) {}
	}
	if sc.dir == "" {
		d, err := os.MkdirTemp("", "homeostat-bench")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		sc.dir = d
	}
	// This process's peak is this run's: runs follow one another in it.
	resetPeak()
	store, conn, url, err := startStore(ctx, cfg, sc.dir)
	if err != nil {
		return nil, err
	}
	defer components{store}.stop()
	defer conn.Close()
	sc.conn, sc.store, sc.natsURL = conn, store, url
	res := &Result{Scenario: fmt.Sprintf("%d deployment(s) x %d replicas on %d nodes", cfg.Deployments, cfg.Replicas, cfg.Nodes),
		Pods: cfg.Deployments * cfg.Replicas, Nodes: cfg.Nodes, ViaAPI: cfg.ViaAPI}
	if cfg.ViaAPI {
		res.Scenario += ", through the API"
	}
	sc.progress("measuring the store's write ceiling")
	if res.CeilingWrites, err = Ceiling(ctx, conn, 50000); err != nil {
		return nil, err
	}
	res.CeilingPods = res.CeilingWrites / 3
	sc.progress("ceiling: %.0f writes/s, so at most %.0f pods/s", res.CeilingWrites, res.CeilingPods)
	if err := sc.run(ctx, res); err != nil {
		return nil, err
	}
	res.PeakRSS[selfName] = peakRSS(os.Getpid())
	return res, nil
}

// scenario is one run: its settings, the bus it measures, and where its
// store and logs go.
type scenario struct {
	cfg      Config
	conn     *bus.Conn
	store    *component
	natsURL  string
	dir      string
	progress func(string, ...any)
}

// run starts the components, creates the Deployments, waits until every
// pod runs, and fills in res.
func (sc scenario) run(ctx context.Context, res *Result) error {
	// What the run starts (its watch of every pod, above all) ends with
	// it, not with the bench: the next run in this process would hold it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var api *apiServer
	var err error
	if sc.cfg.ViaAPI {
		sc.progress("starting the API")
		if api, err = startAPI(ctx, sc.cfg, sc.natsURL, sc.dir); err != nil {
			return err
		}
		defer components{api.proc}.stop()
	}
	procs, err := startComponents(sc.cfg, sc.natsURL, sc.dir)
	if err != nil {
		return err
	}
	defer procs.stop()
	sc.progress("waiting for %d nodes", sc.cfg.Nodes)
	if err := waitNodes(ctx, sc.conn, sc.cfg.Nodes, 5*time.Minute); err != nil {
		return err
	}
	w, err := watchPods(ctx, sc.conn)
	if err != nil {
		return err
	}
	// Made and checked before the clock starts, as a user's would be.
	objs, err := deployments(sc.cfg.Deployments, sc.cfg.Replicas)
	if err != nil {
		return err
	}
	all := append(components{sc.store}, procs...)
	if api != nil {
		all = append(components{api.proc}, all...)
	}
	stopProfiles, err := sc.startProfiles(all)
	if err != nil {
		return err
	}
	defer stopProfiles()
	// Each component's writes are read beside the streams', so that the
	// two tell the same time.
	workBefore := all.work(ctx)
	before, err := sc.conn.Writes(ctx)
	if err != nil {
		return err
	}
	busyBefore, totalBefore := machineCPU()
	start := time.Now()
	if err := sc.create(ctx, api, objs); err != nil {
		return err
	}
	submitted := time.Since(start)
	lat, last, err := w.waitAll(ctx, res.Pods, cmp.Or(sc.cfg.Timeout, 10*time.Minute), sc.progress)
	if err != nil {
		return err
	}
	// The cores' share is the scenario's, not the wait for the counts'.
	if busy, total := machineCPU(); total > totalBefore {
		res.MachineBusy = float64(busy-busyBefore) / float64(total-totalBefore)
	}
	work, after, short, err := workSettled(ctx, all, sc.conn, workBefore, before, countWait)
	if err != nil {
		return err
	}
	if short > 0 {
		sc.progress("the writers counted %.0f fewer pod writes than the store took after %s (answers lost)", short, countWait)
	}
	res.Work = work
	// After the work is read: each component's heap profile begins with
	// a collection.
	stopProfiles()
	res.converged(last.Sub(start), lat)
	res.Stages = w.stages(start)
	res.Stages.Submitted = submitted
	res.writes(before, after, time.Since(start))
	res.writers()
	if api != nil && sc.cfg.APIProbes {
		if res.API, err = (apiProbe{api: api, size: sc.cfg.Probe, progress: sc.progress}).run(ctx, res.Pods); err != nil {
			return err
		}
	}
	res.PeakRSS = all.peaks()
	return nil
}

// startProfiles profiles the scenario, when asked to: each component
// from SIGUSR1 to SIGUSR2, and the bench's own process, its watch of
// every pod. stop may be called more than once.
func (sc scenario) startProfiles(cs components) (stop func(), err error) {
	if sc.cfg.CPUProfile == "" {
		return func() {}, nil
	}
	stopSelf, err := profile(filepath.Join(sc.cfg.CPUProfile, fmt.Sprintf("bench-%d", os.Getpid())))
	if err != nil {
		return nil, err
	}
	cs.signal(syscall.SIGUSR1)
	var once sync.Once
	return func() {
		once.Do(func() {
			cs.signal(syscall.SIGUSR2)
			stopSelf()
			cs.awaitHeaps(sc.cfg.CPUProfile, heapWait)
		})
	}, nil
}

// heapWait bounds the wait for the components' heap profiles.
const heapWait = time.Minute

// create makes the scenario's Deployments, through the API when there is one.
func (sc scenario) create(ctx context.Context, api *apiServer, objs []*object.Object) error {
	sc.progress("creating %d deployment(s) of %d", sc.cfg.Deployments, sc.cfg.Replicas)
	if api != nil {
		return createDeploymentsViaAPI(ctx, api, objs)
	}
	return createDeployments(ctx, sc.conn, objs)
}

// converged fills in the figures of pods that all ran after elapsed, each
// lat after its creation.
func (r *Result) converged(elapsed time.Duration, lat []time.Duration) {
	r.Elapsed = elapsed
	r.PodsPerSec = float64(r.Pods) / elapsed.Seconds()
	r.Ratio = r.PodsPerSec / r.CeilingPods
	r.P50, r.P99 = percentiles(lat)
}

// writes fills in the writes per pod between two counts taken over
// elapsed.
func (r *Result) writes(before, after map[string]uint64, elapsed time.Duration) {
	r.WritesPerPod = map[string]float64{}
	var total uint64
	for stream, n := range after {
		if d := n - before[stream]; d > 0 && stream != "ceiling" {
			r.WritesPerPod[stream] = float64(d) / float64(r.Pods)
			total += d
		}
	}
	r.TotalWritesPerPod = float64(total) / float64(r.Pods)
	r.WriteShare = float64(total) / elapsed.Seconds() / r.CeilingWrites
}

// writers splits the writes per pod by the component that made them.
func (r *Result) writers() {
	r.WritesByWriter = map[string]map[string]float64{}
	counted := 0.0
	for _, w := range r.Work {
		if w.Writes == nil {
			continue
		}
		per := map[string]float64{}
		for stream, n := range w.Writes {
			if stream != "ceiling" {
				per[stream] = n / float64(r.Pods)
				counted += per[stream]
			}
		}
		r.WritesByWriter[w.Name] = per
	}
	r.Uncounted = r.TotalWritesPerPod - counted
}

// Ceiling measures async publishes with a revision check to KV subjects,
// the write path every Homeostat write takes.
func Ceiling(ctx context.Context, conn *bus.Conn, n int) (float64, error) {
	return conn.MeasureWriteCeiling(ctx, n, make([]byte, 256))
}

// waitNodes waits until n nodes are registered and Ready, and the
// controllers have taken each on (its RegisteredNode event): the cluster
// a user would start from, so that nodes joining are not in the figures.
func waitNodes(ctx context.Context, conn *bus.Conn, n int, within time.Duration) error {
	nodes, err := conn.Store(ctx, bus.StoreSpec{Resource: "nodes", Kind: "Node"})
	if err != nil {
		return err
	}
	events, err := conn.Store(ctx, reconcile.EventKind.StoreSpec())
	if err != nil {
		return err
	}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if ready, taken := nodesSettled(ctx, nodes, events); ready >= n && taken >= n {
			return nil
		}
		if !clock.Sleep(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("bench: %d nodes were not registered, Ready and taken on by the controllers within %s", n, within)
}

// nodesSettled counts the Ready nodes and the nodes the controllers have
// announced with a RegisteredNode event.
func nodesSettled(ctx context.Context, nodes, events *bus.Store) (ready, taken int) {
	l, err := nodes.List(ctx, bus.ListOptions{Shared: true})
	if err != nil {
		return 0, 0
	}
	for _, o := range l.Items {
		var st kinds.NodeStatus
		if o.DecodeStatus(&st) != nil {
			continue
		}
		if c := object.FindCondition(st.Conditions, "Ready"); c != nil && c.Status == "True" {
			ready++
		}
	}
	if ready < len(l.Items) {
		return ready, 0
	}
	evs, err := events.List(ctx, bus.ListOptions{Shared: true})
	if err != nil {
		return ready, 0
	}
	seen := map[string]bool{}
	for _, o := range evs.Items {
		if e, err := kinds.EventOf(o); err == nil && e.Reason == "RegisteredNode" {
			seen[e.InvolvedObject.Name] = true
		}
	}
	return ready, len(seen)
}

// deployments are the scenario's Deployments, defaulted and validated as
// the API would.
func deployments(n, replicas int) ([]*object.Object, error) {
	reg, err := schemas.New()
	if err != nil {
		return nil, err
	}
	res := reg.MustLookup("apps", "deployments")
	objs := make([]*object.Object, 0, n)
	for i := range n {
		name := fmt.Sprintf("bench-%d", i)
		raw := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q,"namespace":"default"},
"spec":{"replicas":%d,"selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},
"spec":{"containers":[{"name":"c","command":["sleep","infinity"],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}}}`,
			name, replicas, name, name)
		doc, err := schemas.DecodeJSON([]byte(raw))
		if err != nil {
			return nil, err
		}
		res.Default(doc)
		if err := res.Validate(doc); err != nil {
			return nil, err
		}
		b, _ := json.Marshal(doc)
		var o object.Object
		if err := json.Unmarshal(b, &o); err != nil {
			return nil, err
		}
		objs = append(objs, &o)
	}
	return objs, nil
}

// createDeployments writes the deployments to the store directly.
func createDeployments(ctx context.Context, conn *bus.Conn, objs []*object.Object) error {
	reg, err := schemas.New()
	if err != nil {
		return err
	}
	st, err := conn.Store(ctx, reconcile.KindOf(reg.MustLookup("apps", "deployments")).StoreSpec())
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := st.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// Stages is when a scenario's pods passed each step on their way to
// Running, to tell which step holds the others up.
type Stages struct {
	// FirstCreated is when the first pod was seen created; LastCreated,
	// LastBound and LastRunning when the last pod was seen created, bound
	// to a node and Running; all from the first Deployment's create.
	FirstCreated, LastCreated, LastBound, LastRunning time.Duration
	// Submitted is when the bench had made the last Deployment.
	Submitted time.Duration
	// Bind is created -> bound and Start bound -> Running, p50 and p99.
	BindP50, BindP99, StartP50, StartP99 time.Duration
	// WatchLag is how long after the store took a pod's write the bench's
	// watch saw it, p50 and p99: the part of the figures above that is
	// the bench's own looking.
	WatchLagP50, WatchLagP99 time.Duration
}

// podWatch records when each pod appears, is bound, and first runs ready.
type podWatch struct {
	mu      sync.Mutex
	created map[string]time.Time
	bound   map[string]time.Time
	running map[string]time.Time
	lags    []time.Duration // of every write seen
	last    time.Time
	changed chan struct{}
	// done is closed when the watch has ended, with its context.
	done chan struct{}
}

func watchPods(ctx context.Context, conn *bus.Conn) (*podWatch, error) {
	st, err := conn.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		return nil, err
	}
	// Raw: the watch reads the few fields it needs (readProgress).
	ch, err := st.Watch(ctx, bus.WatchOptions{Buffer: 65536, Raw: true})
	if err != nil {
		return nil, err
	}
	w := &podWatch{created: map[string]time.Time{}, bound: map[string]time.Time{}, running: map[string]time.Time{},
		changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ev := range ch {
			if ev.Raw == nil || ev.Type == bus.Deleted {
				continue
			}
			now := time.Now()
			key := ev.Key
			// This goroutine alone writes the maps, so it reads them
			// unlocked: a pod seen Running needs no more reading, one
			// seen bound no spec.
			_, bound := w.bound[key]
			_, running := w.running[key]
			var p podProgress
			if !running {
				var err error
				if p, err = readProgress(ev.Raw, ev.Layout, bound); err != nil {
					continue
				}
			}
			w.mu.Lock()
			w.lags = append(w.lags, now.Sub(ev.Time))
			if _, ok := w.created[key]; !ok {
				w.created[key] = now
			}
			if !bound && p.Spec.NodeName != "" {
				w.bound[key] = now
			}
			if !running && p.runningReady() {
				w.running[key] = now
				w.last = now
			}
			w.mu.Unlock()
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
	}()
	return w, nil
}

func (w *podWatch) waitAll(ctx context.Context, n int, timeout time.Duration, progress func(string, ...any)) ([]time.Duration, time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		w.mu.Lock()
		done := len(w.running)
		w.mu.Unlock()
		if done >= n {
			break
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		case <-deadline.C:
			return nil, time.Time{}, fmt.Errorf("bench: only %d of %d pods running after %s", done, n, timeout)
		case <-tick.C:
			progress("%d of %d pods running", done, n)
		case <-w.changed:
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lat := make([]time.Duration, 0, len(w.running))
	for key, r := range w.running {
		lat = append(lat, r.Sub(w.created[key]))
	}
	return lat, w.last, nil
}

// Spread is several runs' figure: its median, least and greatest.
type Spread struct{ Median, Min, Max float64 }

// SpreadOf is the spread of xs (the mean of the middle two for an even
// count).
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// profile writes a CPU profile of this process to base.prof until stop,
// and then its live heap to base.heap.
func profile(base string) (stop func(), err error) {
	f, err := os.Create(base + ".prof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		// The heap as the scenario ends, every pod Running: the bench's
		// watch's, which its peak memory counts.
		if h, err := os.Create(base + ".heap"); err == nil {
			runtime.GC()
			_ = pprof.WriteHeapProfile(h)
			h.Close()
		}
	}, nil
}

// stages tells, once every pod runs, when the last of them passed each
// step since start, and how long each step took.
func (w *podWatch) stages(start time.Time) Stages {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := stagesOf(start, w.created, w.bound, w.running)
	if len(w.lags) > 0 {
		st.WatchLagP50, st.WatchLagP99 = percentiles(w.lags)
	}
	return st
}

// stagesOf is the stages of the pods that run, by key. A pod whose bind
// the watch saw only with its Running status counts as bound then.
func stagesOf(start time.Time, created, bound, running map[string]time.Time) Stages {
	var st Stages
	var binds, starts []time.Duration
	for key, r := range running {
		c := created[key]
		if len(binds) == 0 || c.Sub(start) < st.FirstCreated {
			st.FirstCreated = c.Sub(start)
		}
		b, ok := bound[key]
		if !ok {
			b = r
		}
		st.LastCreated = max(st.LastCreated, c.Sub(start))
		st.LastBound = max(st.LastBound, b.Sub(start))
		st.LastRunning = max(st.LastRunning, r.Sub(start))
		binds = append(binds, b.Sub(c))
		starts = append(starts, r.Sub(b))
	}
	if len(binds) > 0 {
		st.BindP50, st.BindP99 = percentiles(binds)
		st.StartP50, st.StartP99 = percentiles(starts)
	}
	return st
}
