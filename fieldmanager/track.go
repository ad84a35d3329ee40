package fieldmanager

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homeostat/homeostat/object"
)

// Track records a write made through the bus by a controller or a node
// agent under manager. A write that changes only the status (what the
// status subresource would take; see object.StatusOnly) comes with subresource
// status and is recorded with it.
//
// Events are not tracked: they are records written once, by the
// component their source names, which no one applies, and they come at
// the rate pods start.
func (m *Managers) Track(manager, subresource string, live, next *object.Object) *object.Object {
	if next.Kind == "Event" {
		return next
	}
	if live == nil {
		return m.created(manager, next)
	}
	return m.updated(manager, subresource, live, next)
}

// created records a create. A controller makes many objects alike (a
// ReplicaSet's pods differ only in what the field manager strips: name,
// uid, creation time), and the field manager's answer for one is its
// answer for all but the time, so answers are remembered by content.
func (m *Managers) created(manager string, next *object.Object) *object.Object {
	key, ok := createKey(manager, next)
	if !ok {
		return m.Update(manager, "", nil, next)
	}
	if entries, ok := m.creates.get(key); ok {
		entries = slices.Clone(entries)
		now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		for i := range entries {
			entries[i].Time = &now
		}
		if b, err := json.Marshal(entries); err == nil {
			next.Metadata.ManagedFields = b
			return next
		}
	}
	next = m.Update(manager, "", nil, next)
	var entries []metav1.ManagedFieldsEntry
	if json.Unmarshal(next.Metadata.ManagedFields, &entries) == nil && len(entries) > 0 {
		m.creates.put(key, entries)
	}
	return next
}

// createKey is what a create's managed fields depend on: its manager and
// the object without the fields the field manager strips. An object that
// brings managed fields of its own is not remembered.
func createKey(manager string, o *object.Object) ([32]byte, bool) {
	if len(o.Metadata.ManagedFields) > 0 {
		return [32]byte{}, false
	}
	s := *o
	s.Metadata.Name, s.Metadata.Namespace, s.Metadata.UID, s.Metadata.ResourceVersion = "", "", "", ""
	s.Metadata.CreationTimestamp, s.Metadata.Generation = time.Time{}, 0
	b, err := object.Encode(&s)
	if err != nil {
		return [32]byte{}, false
	}
	h := sha256.New()
	h.Write([]byte(manager))
	h.Write([]byte{0})
	h.Write(b)
	var key [32]byte
	h.Sum(key[:0])
	return key, true
}

// memo holds the field manager's answers to recent writes, a bounded
// number; what it holds is not changed.
type memo[V any] struct {
	mu sync.Mutex
	m  map[[32]byte]V
}

const memoSize = 1024

func (c *memo[V]) get(key [32]byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *memo[V]) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

func (c *memo[V]) put(key [32]byte, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= memoSize {
		c.m = map[[32]byte]V{}
	}
	c.m[key] = v
}
