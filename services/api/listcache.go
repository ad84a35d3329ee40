package api

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/reconcile"
)

// listCaches answer lists from memory, as the Kubernetes API server
// answers consistent lists from its watch cache. The first list of a
// built-in kind starts an informer of it, kept until the API stops. Once
// that has synced, a list takes the stream's last revision from its
// leader and is answered from the informer when it reflects that
// revision (it has applied every message up to it, in order), so the
// answer holds every write acknowledged before the list began: the same
// promise as the store's list. A list whose informer has not synced, is
// still behind after cacheWait, or holds a corrupt value (which the
// store's list reports to the client) reads the store.
//
// Decision: a list of 10,000 pods read every value from the bus, about
// 50 MB through the server and the API's connection each time; the cache
// costs one request. Its price is each cached kind's objects in the API's
// memory and every change of the kind decoded there (in `up` shared with
// the controllers' and the scheduler's informers, which decode it anyway).
// Custom kinds, whose buckets go with their definitions, and kinds served
// in another shape, are read from the store.
type listCaches struct {
	log *slog.Logger

	mu    sync.Mutex
	byRes map[*bus.Store]*reconcile.Informer
	// starts hands new informers to run, which runs them until the API
	// stops; nil until it does.
	starts chan *reconcile.Informer
}

// listsServed counts lists by where they were answered from.
var listsServed = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "homeostat_api_lists_total",
	Help: "Lists answered, by resource and source: cache (the API's memory, caught up with the store) or store.",
}, []string{"resource", "source"})

func init() { prometheus.MustRegister(listsServed) }

// cacheWait bounds how long a list waits for its kind's informer to reach
// the stream's last revision before it reads the store instead.
const cacheWait = 500 * time.Millisecond

func newListCaches(log *slog.Logger) *listCaches {
	return &listCaches{log: log, byRes: map[*bus.Store]*reconcile.Informer{}, starts: make(chan *reconcile.Informer, 16)}
}

// run runs the caches' informers until ctx ends.
func (c *listCaches) run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case inf := <-c.starts:
			wg.Add(1)
			go func() { defer wg.Done(); inf.Run(ctx) }()
		}
	}
}

// list answers opts from the cache of ref's kind, or says it cannot.
func (c *listCaches) list(ctx context.Context, ref *resourceRef, opts bus.ListOptions) (*bus.ListResult, bool, error) {
	st, ok := ref.store.(*bus.Store)
	if !ok || ref.res.Custom {
		return nil, false, nil
	}
	inf := c.informer(ref, st)
	if inf == nil || !inf.Synced() || inf.Corrupt() > 0 {
		return nil, false, nil
	}
	rev, err := st.LastRevision(ctx)
	if err != nil {
		return nil, false, err
	}
	if !inf.WaitForRevision(ctx, rev, cacheWait) {
		return nil, false, ctx.Err()
	}
	items, at := inf.Snapshot()
	res, err := st.PageOf(items, at, opts)
	return res, err == nil, err
}

// informer is the cache of st, started on first need; nil while it is
// being started, or when the caches do not run.
func (c *listCaches) informer(ref *resourceRef, st *bus.Store) *reconcile.Informer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.byRes[st]; ok {
		return inf
	}
	inf := reconcile.NewInformer(reconcile.KindOf(ref.res), st, c.log)
	select {
	case c.starts <- inf:
		c.byRes[st] = inf
	default: // run is behind, or not running: try again next list
	}
	return nil
}
