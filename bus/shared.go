package bus

import (
	"strings"
	"sync"
	"weak"

	"github.com/homeostat/homeostat/object"
)

// sharedObjects keeps, for the store's shared readers (ListOptions.Shared,
// WatchOptions.Shared), each key's object as last decoded, with its
// revision. A stored value never changes under its revision, so however
// many lists, watches and informers of a process read a change, it is
// decoded once, and encoded once for those that serve it as JSON. What a
// reader reads is still the stream's, so lists stay linearizable and
// watches see every revision.
//
// Entries are kept only while they can be shared: while two shared reads
// or more are under way in the process, or one that serves its objects'
// JSON later (a cache that answers lists). A process's only reader of a
// kind (a controller's informer, the scheduler's, the simulated nodes'
// index) would keep an entry a key for no one: 15 MB at 100,000 pods.
type sharedObjects struct {
	mu sync.Mutex
	m  map[string]*decoded
	// readers counts the shared reads under way, serving those of them
	// that serve JSON.
	readers, serving int
}

// sharing says whether entries are kept and looked up; c.mu is held.
func (c *sharedObjects) sharing() bool { return c.readers > 1 || c.serving > 0 }

// join counts a shared read in until the returned func (idempotent) is
// called as it ends; the entries go with the last that shares them.
func (c *sharedObjects) join(serves bool) (leave func()) {
	c.mu.Lock()
	c.readers++
	if serves {
		c.serving++
	}
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.readers--
			if serves {
				c.serving--
			}
			if !c.sharing() {
				c.m = nil
			}
		})
	}
}

// decodedSets are the shared objects of each bucket, for every connection
// of a process to one server: those Join makes share their first's, so the
// API, controllers and scheduler of one process decode a change once
// between them, each on its own credentials (an entry is found only by
// the revision of a message its reader has read).
type decodedSets struct {
	mu sync.Mutex
	m  map[string]*sharedObjects
}

// of returns the shared objects of bucket.
func (d *decodedSets) of(bucket string) *sharedObjects {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*sharedObjects{}
	}
	so, ok := d.m[bucket]
	if !ok {
		so = &sharedObjects{}
		d.m[bucket] = so
	}
	return so
}

// decoded is one revision of an object, shared by every reader of it. It
// holds the object weakly: the readers that keep it keep it alive, and
// one that keeps less of it (an informer's SetKeep) lets the rest go.
// A revision read again once nothing holds its object is decoded again.
// One made for a single event while nothing is shared holds it as own,
// for the event's JSON alone.
type decoded struct {
	rev uint64
	obj weak.Pointer[object.Object]
	// own is the object of an entry made for one event while nothing is
	// shared, held by the event alone, for its JSON.
	own  *object.Object
	once sync.Once
	json []byte
}

// object is the entry's object, nil once no reader holds a shared one.
func (d *decoded) object() *object.Object {
	if d.own != nil {
		return d.own
	}
	return d.obj.Value()
}

// encoded returns the JSON as served (resourceVersion set) of o, the
// entry's object, which its caller holds: encoded on first need, nil if
// it cannot be.
func (d *decoded) encoded(o *object.Object) []byte {
	d.once.Do(func() {
		if b, err := object.Encode(o); err == nil {
			d.json = b
		}
	})
	return d.json
}

// lookup returns key's entry and its object if it holds revision rev and
// a reader still holds the object.
func (c *sharedObjects) lookup(key string, rev uint64) (*decoded, *object.Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.sharing() {
		return nil, nil, false
	}
	d, ok := c.m[key]
	if !ok || d.rev != rev {
		return nil, nil, false
	}
	o := d.object()
	if o == nil {
		delete(c.m, key) // and with it any JSON of the object, never served again
		return nil, nil, false
	}
	return d, o, true
}

// keep records key's object at rev, unless a later revision is held, and
// returns the entry of rev and its object: the one already held when
// another reader decoded the same revision first and holds it still, so
// that readers share one value. While nothing is shared it keeps nothing
// and returns an entry of o's own.
func (c *sharedObjects) keep(key string, rev uint64, o *object.Object) (*decoded, *object.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.sharing() {
		return &decoded{rev: rev, own: o}, o
	}
	d := &decoded{rev: rev, obj: weak.Make(o)}
	if c.m == nil {
		c.m = map[string]*decoded{}
	}
	cur, ok := c.m[key]
	if ok && cur.rev == rev {
		if held := cur.object(); held != nil {
			return cur, held
		}
	}
	if !ok || cur.rev <= rev {
		c.m[key] = d
	}
	return d, o
}

// drop forgets key's entry if it is older than rev (the key was deleted at rev).
func (c *sharedObjects) drop(key string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.m[key]; ok && cur.rev < rev {
		delete(c.m, key)
	}
}

// forget drops the entries under prefix (every one for "") that a list
// of that prefix did not find live.
func (c *sharedObjects) forget(prefix string, live map[string]*object.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if strings.HasPrefix(k, prefix) && live[k] == nil {
			delete(c.m, k)
		}
	}
}

// sharedEvent classifies one stored message as toEvent does, taking the
// object from the shared entries when they hold its revision and keeping
// there the one it decodes. Its event's JSON method serves the object's
// JSON, encoded once for all.
func (s *Store) sharedEvent(m rawMsg, live bool, prior Prior) Event {
	key := m.subject[len(s.subjPrefix):]
	if isTombstone(m.header) {
		s.shared.drop(key, m.seq)
		return s.toEvent(m, live, nil)
	}
	if d, o, ok := s.shared.lookup(key, m.seq); ok {
		return Event{Type: eventType(m, live), Key: key, Revision: m.seq, Time: m.time, Trace: extractSpan(m.header),
			StatusBy: statusBy(m, live), Object: o, shared: d}
	}
	ev := s.toEvent(m, live, prior)
	if ev.Type == Added || ev.Type == Modified {
		ev.Object.ShareParts()
		ev.shared, ev.Object = s.shared.keep(key, m.seq, ev.Object)
	}
	return ev
}
