package api

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// listCaches answer lists from memory, as the Kubernetes API server
// answers consistent lists from its watch cache. The first list of every
// object of a built-in kind (one without a limit) starts an informer of
// it, kept while lists use it (see below); a limited list uses one that
// runs but starts none, since a page of a large namespace reads only its own
// values (bus.Store.List), and so a restart's paged reads do not add a
// reader of every object while the controllers' caches fill. Once
// that has synced, a list takes the stream's last revision from its
// leader, gives the informer up to cacheWait to reach it, copies the
// informer's objects with the revision of the last message it was
// delivered, and brings the copy to the present with every message after
// that one, read from the leader (bus.Store.CatchUp): a watch passes over
// a message replaced before it got there, so reaching a revision alone
// does not prove the cache holds every write up to it. The answer then
// holds every write acknowledged before the list began, as the store's
// list does. A list reads the store instead when the informer has not
// synced, holds a corrupt value (which the store's list reports to the
// client), or is more than catchUpMost messages behind.
//
// Decision: a list of 10,000 pods read every value from the bus, 21 MB
// through the server and the API's connection each time; from memory it
// costs two requests to the leader when the informer is current. Its
// price is each cached kind's objects in the API's memory and every change
// of the kind decoded there (in `up` shared with the controllers' and the
// scheduler's informers, which decode it anyway). Custom kinds, whose
// buckets go with their definitions, kinds served in another shape, and
// kinds whose objects expire (Events: the store drops them without a
// message a watch would see) are read from the store.
//
// Decision: a cache that answers nothing for idle (Config.ListCacheIdle,
// 10 minutes by default) is stopped and dropped, and the next list of its
// kind starts it again (that list and the next few read the store while it
// syncs). Kubernetes keeps its watch caches for good; here a kind listed
// once, say by a dashboard gone since, would otherwise hold every object
// of its kind in the API's memory and decode every change of it until the
// API stops.
type listCaches struct {
	log  *slog.Logger
	idle time.Duration

	mu    sync.Mutex
	byRes map[*bus.Store]*listCache
	// stopped: run has ended, and starts no cache again.
	stopped bool
	// starts hands new caches to run, which runs each until it is dropped
	// or the API stops.
	starts chan *listCache
}

// listCache is one kind's cache and when it last answered; its fields
// are guarded by listCaches.mu.
type listCache struct {
	inf  *reconcile.Informer
	used time.Time
	// stop ends its informer; set by run, nil until then.
	stop context.CancelFunc
}

// listsServed counts lists by where they were answered from.
var listsServed = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "homeostat_api_lists_total",
	Help: "Lists answered, by resource and source: cache (the API's memory, caught up with the store) or store.",
}, []string{"resource", "source"})

// listCachesHeld counts the kinds whose objects the API's list caches
// hold, in every API of the process.
var listCachesHeld = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "homeostat_api_list_caches",
	Help: "Kinds whose objects the API holds in memory to answer lists; a cache idle for the API's ListCacheIdle is dropped.",
})

func init() { prometheus.MustRegister(listsServed, listCachesHeld) }

// DefaultListCacheIdle is how long a list cache is kept with nothing to
// answer.
const DefaultListCacheIdle = 10 * time.Minute

const (
	// cacheWait bounds how long a list waits for its kind's informer to
	// reach the stream's last revision before catching up itself.
	cacheWait = 500 * time.Millisecond
	// catchUpMost is how many messages a list reads to bring a copy of the
	// cache to the present before it reads the store instead.
	catchUpMost = 256
)

func newListCaches(log *slog.Logger, idle time.Duration) *listCaches {
	if idle <= 0 {
		idle = DefaultListCacheIdle
	}
	return &listCaches{log: log, idle: idle, byRes: map[*bus.Store]*listCache{}, starts: make(chan *listCache, 16)}
}

// run runs the caches' informers until ctx ends, and drops those idle.
func (c *listCaches) run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(max(c.idle/4, 10*time.Millisecond))
	defer tick.Stop()
	defer c.stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case lc := <-c.starts:
			ictx, stop := context.WithCancel(ctx)
			c.mu.Lock()
			lc.stop = stop
			c.mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); lc.inf.Run(ictx) }()
		case now := <-tick.C:
			c.dropIdle(now.Add(-c.idle))
		}
	}
}

// stop drops every cache and starts none again: the API stops. It marks
// the caches stopped first, so that no list starts one in between.
func (c *listCaches) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.dropIdle(time.Time{})
}

// dropIdle stops and forgets the running caches last used before since
// (every one when since is zero). A list that took one just before still
// proves its answer against the store (bus.Store.CatchUp).
func (c *listCaches) dropIdle(since time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for st, lc := range c.byRes {
		if !since.IsZero() && (lc.stop == nil || !lc.used.Before(since)) {
			continue
		}
		if lc.stop != nil {
			lc.stop()
		}
		delete(c.byRes, st)
		listCachesHeld.Dec()
	}
}

// list answers opts from the cache of ref's kind, or says it cannot.
func (c *listCaches) list(ctx context.Context, ref *resourceRef, opts bus.ListOptions) (*bus.ListResult, bool, error) {
	st, ok := ref.store.(*bus.Store)
	if !ok || ref.res.Custom || ref.res.TTL > 0 {
		return nil, false, nil
	}
	// A limited list of a large namespace reads its page alone; only a
	// list of everything makes a cache worth its price.
	inf := c.informer(ref.res, st, opts.Limit == 0)
	if inf == nil || !inf.Synced() {
		return nil, false, nil
	}
	rev, err := st.LastRevision(ctx)
	if err != nil {
		return nil, false, err
	}
	// Waiting only shortens the catching up that proves the answer.
	inf.WaitForRevision(ctx, rev, cacheWait)
	items, delivered, corrupt := inf.Snapshot()
	if corrupt > 0 {
		return nil, false, nil
	}
	at, ok, err := st.CatchUp(ctx, items, delivered, rev, catchUpMost)
	if !ok || err != nil {
		return nil, false, err
	}
	res, err := st.PageOf(items, at, opts)
	return res, err == nil, err
}

// cached is the object at key of res's kind as its cache holds it, once
// that has synced (false when it has not, or has no such key); it starts
// the kind's cache if there is none.
func (c *listCaches) cached(res *schemas.Resource, st *bus.Store, key string) (*object.Object, bool) {
	inf := c.informer(res, st, true)
	if inf == nil || !inf.Synced() {
		return nil, false
	}
	return inf.Get(key)
}

// informer is the cache of st, started when start is set and it has
// none; nil when it has none yet. Either way it counts as used now.
func (c *listCaches) informer(res *schemas.Resource, st *bus.Store, start bool) *reconcile.Informer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lc, ok := c.byRes[st]; ok {
		lc.used = time.Now()
		return lc.inf
	}
	if !start || c.stopped {
		return nil
	}
	lc := &listCache{inf: reconcile.NewInformer(reconcile.KindOf(res), st, c.log), used: time.Now()}
	lc.inf.SetServing() // its lists serve each object's JSON as encoded once
	select {
	case c.starts <- lc:
		c.byRes[st] = lc
		listCachesHeld.Inc()
	default: // run is behind, or not running: try again next list
	}
	return nil
}
