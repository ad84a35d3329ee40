package bus

import (
	"strings"
	"sync"

	"github.com/homeostat/homeostat/object"
)

// listCache keeps, for lists that accept shared items (ListOptions.Shared),
// each key's object as last decoded, with its revision and its JSON as
// served (resourceVersion set). A stored value never changes under its
// revision, so a list decodes and encodes only what changed since the
// last one; what it reads is still the stream's, so the list stays
// linearizable.
type listCache struct {
	mu sync.Mutex
	m  map[string]listEntry
}

type listEntry struct {
	rev  uint64
	obj  *object.Object
	json []byte
}

// lookup returns key's entry if it holds revision rev.
func (c *listCache) lookup(key string, rev uint64) (listEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e, ok && e.rev == rev
}

// keep records key's object at rev with its JSON.
func (c *listCache) keep(key string, rev uint64, o *object.Object) (listEntry, error) {
	b, err := object.Encode(o)
	if err != nil {
		return listEntry{}, err
	}
	e := listEntry{rev: rev, obj: o, json: b}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]listEntry{}
	}
	if cur, ok := c.m[key]; !ok || cur.rev < rev {
		c.m[key] = e
	}
	return e, nil
}

// forget drops the entries under prefix (every one for "") that a list
// of that prefix did not find live.
func (c *listCache) forget(prefix string, live map[string]*object.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if strings.HasPrefix(k, prefix) && live[k] == nil {
			delete(c.m, k)
		}
	}
}
