package reconcile

import (
	"context"
	"sync"
)

// ownWrites remembers, for each key, the latest revision its last pass in
// this process wrote to each resource that a cache of the manager
// follows, until the key's next pass here: that pass first waits for the
// caches to show those writes, as client-go's controllers keep
// expectations of the creates and deletes they made. Without it, a
// ReplicaSet's next pass, begun before the pod cache showed the last
// pass's creates, made them again: each a refused create and a read of
// the key (1,894 of a ReplicaSet of 10,000's creates).
//
// What the caches show already by the end of the pass is not kept, and
// the keys that wait are looked over as their number doubles, so that
// keys that never pass again keep nothing for long.
type ownWrites struct {
	mu      sync.Mutex
	keys    map[string]map[string]uint64
	sweepAt int
}

// ownWritesSweep is the fewest keys waiting before they are looked over.
const ownWritesSweep = 1024

// remember keeps what a pass of key wrote (latest, by resource) that
// shown does not say a cache has.
func (w *ownWrites) remember(key string, latest map[string]uint64, shown func(resource string, rev uint64) bool) {
	var pending map[string]uint64
	for r, rev := range latest {
		if shown(r, rev) {
			continue
		}
		if pending == nil {
			pending = map[string]uint64{}
		}
		pending[r] = rev
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if pending == nil {
		delete(w.keys, key)
		return
	}
	if w.keys == nil {
		w.keys = map[string]map[string]uint64{}
	}
	w.keys[key] = pending
	if len(w.keys) < max(w.sweepAt, ownWritesSweep) {
		return
	}
	for k, revs := range w.keys {
		for r, rev := range revs {
			if shown(r, rev) {
				delete(revs, r)
			}
		}
		if len(revs) == 0 {
			delete(w.keys, k)
		}
	}
	w.sweepAt = 2 * len(w.keys)
}

// take returns what key's last pass wrote that the caches did not show
// then, and forgets it.
func (w *ownWrites) take(key string) map[string]uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	revs := w.keys[key]
	delete(w.keys, key)
	return revs
}

// shows says whether the manager's cache of resource has reached rev;
// true when the manager keeps no cache of it (nothing to wait for).
func (c *Controller) shows(resource string, rev uint64) bool {
	inf := c.mgr.informerOf(resource)
	return inf == nil || inf.Revision() >= rev
}

// awaitOwnWrites waits, up to CacheWait, for the caches to show what the
// key's last pass here wrote. A cache that does not get there in time is
// read as it is: the pass may then repeat a write, which its store
// refuses (a create of an existing name) or takes as it would a
// concurrent one.
func (c *Controller) awaitOwnWrites(ctx context.Context, key string) {
	for r, rev := range c.written.take(key) {
		inf := c.mgr.informerOf(r)
		if inf != nil && !inf.WaitForRevision(ctx, rev, c.opts.CacheWait) {
			c.log.Debug("cache behind this process's own writes; reconciling anyway", "controller", c.opts.Name,
				"key", key, "resource", r, "revision", rev)
		}
	}
}
