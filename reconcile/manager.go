package reconcile

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	Bus    *bus.Conn
	Logger *slog.Logger
	// DrainTimeout bounds how long reconciles in flight may finish after
	// shutdown begins (default 30s).
	DrainTimeout time.Duration
	// Identity names this process in the claims of Exclusive controllers;
	// one that survives restarts lets a restarted process take its claims
	// back at once (default: a new one each start).
	Identity string
	// NoHistory records no reconcile history (explain and history then
	// show none); it exists to measure what the history costs.
	NoHistory bool
}

// Manager owns the informers shared by a process's controllers and runs
// them all.
type Manager struct {
	opts    ManagerOptions
	log     *slog.Logger
	retries *retries
	history *historyWriter

	// warnings records the runtime's own Warning events.
	warnings *Recorder

	mu          sync.Mutex
	informers   map[string]*Informer
	controllers []*Controller
	recorders   []*Recorder
	started     bool
	ready       chan struct{}
}

// NewManager creates a manager; add controllers, then Run.
func NewManager(ctx context.Context, opts ManagerOptions) (*Manager, error) {
	if opts.Bus == nil {
		return nil, errors.New("reconcile: ManagerOptions.Bus is required")
	}
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	if opts.Identity == "" {
		opts.Identity = uuid.NewString()
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	r, err := newRetries(ctx, opts.Bus, log)
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, log: log, retries: r, informers: map[string]*Informer{}, ready: make(chan struct{})}
	if !opts.NoHistory {
		h, err := opts.Bus.History(ctx, bus.HistoryOptions{})
		if err != nil {
			return nil, err
		}
		m.history = newHistoryWriter(h, log)
	}
	if m.warnings, err = m.Recorder(ctx, "homeostat-runtime"); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Manager) reportCorrupt(ctx context.Context, k Kind, key string, err error) {
	m.warnings.CorruptObject(ctx, k, key, err)
}

// Ready is closed once every cache has listed and the controllers start.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// Bus is the manager's connection.
func (m *Manager) Bus() *bus.Conn { return m.opts.Bus }

// Logger is the manager's logger.
func (m *Manager) Logger() *slog.Logger { return m.log }

// Informer returns the shared informer of a kind, creating it on first use.
func (m *Manager) Informer(k Kind) *Informer {
	m.mu.Lock()
	defer m.mu.Unlock()
	if inf, ok := m.informers[k.Resource]; ok {
		return inf
	}
	inf := newInformer(k, nil, m.log)
	inf.OnCorrupt(m.reportCorrupt)
	m.informers[k.Resource] = inf
	return inf
}

func (m *Manager) informerOf(resource string) *Informer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.informers[resource]
}

// Add registers a controller; its queue is created now.
func (m *Manager) Add(ctx context.Context, opts Options) (*Controller, error) {
	if opts.Name == "" || opts.Reconciler == nil || (opts.For.Resource == "" && !opts.NoSource) {
		return nil, errors.New("reconcile: Options need Name, Reconciler, and For unless NoSource")
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	if opts.Backoff == (Backoff{}) {
		opts.Backoff = DefaultBackoff
	}
	if opts.Resync == 0 {
		opts.Resync = 5 * time.Minute
	}
	if opts.AckWait == 0 {
		opts.AckWait = 30 * time.Second
	}
	if opts.CoalesceEvery == 0 {
		opts.CoalesceEvery = 20 * time.Millisecond
	}
	if opts.CacheWait == 0 {
		opts.CacheWait = 5 * time.Second
	}
	if opts.For.Resource != "" {
		if _, err := m.store(ctx, opts.For); err != nil {
			return nil, err
		}
	}
	q, err := m.opts.Bus.Queue(ctx, bus.QueueSpec{Name: opts.Name, AckWait: opts.AckWait})
	if err != nil {
		return nil, err
	}
	c := &Controller{opts: opts, mgr: m, queue: q, log: m.log, author: opts.Name + "/" + rand.Text()[:8],
		settling: newSettling(2 * opts.Workers)}
	if opts.Exclusive {
		if c.claims, err = m.claimer(ctx); err != nil {
			return nil, err
		}
	}
	c.enq = newEnqueuer(q, opts.CoalesceEvery, opts.Name, m.log)
	if opts.For.Resource != "" && !opts.NoSource {
		c.enqueueChanges(m.Informer(opts.For))
	}
	m.mu.Lock()
	m.controllers = append(m.controllers, c)
	m.mu.Unlock()
	return c, nil
}

// claimer opens the leases that claims are kept in.
func (m *Manager) claimer(ctx context.Context) (*claimer, error) {
	leases, err := m.opts.Bus.Leases(ctx)
	if err != nil {
		return nil, err
	}
	return &claimer{leases: leases, holder: m.opts.Identity}, nil
}

func (m *Manager) store(ctx context.Context, k Kind) (*bus.Store, error) {
	return m.opts.Bus.Store(ctx, k.StoreSpec())
}

// Run starts every informer, waits until all have listed, then starts the
// controllers; it returns when ctx ends and in-flight reconciles have
// drained.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("reconcile: manager already running")
	}
	m.started = true
	infs := make([]*Informer, 0, len(m.informers))
	for _, inf := range m.informers {
		infs = append(infs, inf)
	}
	ctrls := append([]*Controller(nil), m.controllers...)
	recs := append([]*Recorder(nil), m.recorders...)
	m.mu.Unlock()

	var wg sync.WaitGroup
	defer wg.Wait()
	// The history is written until the reconciles that drain after ctx
	// have ended too (this function returns).
	drained, endHistory := context.WithCancel(context.WithoutCancel(ctx))
	defer endHistory()
	wg.Add(2)
	go func() { defer wg.Done(); m.retries.run(ctx) }()
	// The history outlives ctx by the reconciles that drain after it.
	go func() { defer wg.Done(); m.history.run(drained) }()
	for _, r := range recs {
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(ctx) }()
	}
	for _, inf := range infs {
		st, err := m.store(ctx, inf.kind)
		if err != nil {
			return err
		}
		inf.store = st
		wg.Add(1)
		go func() { defer wg.Done(); inf.run(ctx) }()
	}
	for _, inf := range infs {
		for !inf.Synced() {
			if !clock.Sleep(ctx, 10*time.Millisecond) {
				return nil
			}
		}
		informerObjects.WithLabelValues(inf.kind.Kind).Set(float64(len(inf.Keys())))
	}
	m.log.Info("caches synced; controllers starting", "controllers", len(ctrls), "informers", len(infs))
	close(m.ready)
	// Reconciles in flight get DrainTimeout after shutdown to finish.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var drainTimer *time.Timer
	var drainMu sync.Mutex
	stopDrain := context.AfterFunc(ctx, func() {
		drainMu.Lock()
		drainTimer = time.AfterFunc(m.opts.DrainTimeout, cancelWork)
		drainMu.Unlock()
	})
	defer func() {
		stopDrain()
		drainMu.Lock()
		if drainTimer != nil {
			drainTimer.Stop()
		}
		drainMu.Unlock()
	}()
	errs := make(chan error, len(ctrls))
	for _, c := range ctrls {
		go func() { errs <- c.run(ctx, workCtx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); m.countObjects(ctx, infs) }()
	var first error
	for range ctrls {
		if err := <-errs; err != nil && first == nil {
			first = fmt.Errorf("controller: %w", err)
		}
	}
	return first
}

func (m *Manager) countObjects(ctx context.Context, infs []*Informer) {
	for clock.Sleep(ctx, 5*time.Second) {
		for _, inf := range infs {
			informerObjects.WithLabelValues(inf.kind.Kind).Set(float64(len(inf.Keys())))
		}
	}
}
