package object

import (
	stdjson "encoding/json"
	"sync"
	"unsafe"
)

// managedFields holds one copy of each managed fields value decoded
// lately, which objects decoded from the same bytes share. Pods of one
// owner made in the same second have the same managed fields, byte for
// byte, and they are a third of a pod's JSON: sharing them took 65-77 MB
// off the live heap of a process caching 100,000 pods. Shared values are
// read-only, as every cached object's parts are: nothing writes into a
// RawMessage, a change replaces it.
var managedFields = newInternShards[stdjson.RawMessage](4<<20, 64<<10)

// internShards spreads a table over shards chosen by a key's length, so
// that equal keys meet in one and decodes on many cores seldom wait for
// the same lock.
type internShards[V any] [16]internTable[V]

func newInternShards[V any](maxBytes, maxValue int) *internShards[V] {
	var s internShards[V]
	for i := range s {
		s[i] = internTable[V]{maxBytes: maxBytes / len(s), maxValue: maxValue}
	}
	return &s
}

func (s *internShards[V]) shard(key []byte) *internTable[V] { return &s[len(key)%len(s)] }

// intern returns the kept copy of b's bytes, keeping b (which the caller
// gives up) when there is none. What it returns has no room to grow, so
// that an append to a shared value copies it.
func intern(s *internShards[stdjson.RawMessage], b stdjson.RawMessage) stdjson.RawMessage {
	return internIn(s.shard(b), b)
}

func internIn(t *internTable[stdjson.RawMessage], b stdjson.RawMessage) stdjson.RawMessage {
	if len(b) == 0 {
		return b
	}
	v := b[:len(b):len(b)]
	if len(v) > t.maxValue {
		return v
	}
	if kept, ok := t.kept(v); ok {
		return kept
	}
	// The key aliases the value's bytes, which are never written.
	t.keep(unsafe.String(unsafe.SliceData(v), len(v)), v)
	return v
}

// internTable is a set of values by the bytes they were made from, each
// kept once. When its keys come to maxBytes it starts again, so that
// values no longer made go; their holders keep what they were given
// either way. A key longer than maxValue is not kept.
type internTable[V any] struct {
	maxBytes, maxValue int

	mu   sync.Mutex
	size int
	m    map[string]V
}

// kept returns the value kept for key.
func (t *internTable[V]) kept(key []byte) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[string(key)]
	return v, ok
}

// keep keeps v for key, which must not change; its callers keep no key
// longer than maxValue.
func (t *internTable[V]) keep(key string, v V) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[key]; ok {
		return // another caller made it meanwhile; theirs stays
	}
	if t.m == nil || t.size+len(key) > t.maxBytes {
		t.m, t.size = map[string]V{}, 0
	}
	t.m[key] = v
	t.size += len(key)
}

// SharedDecoder decodes JSON values into values of V and keeps those of
// the values decoded lately: objects made from one template (the pods of
// a ReplicaSet and their containers) then hold one decoded copy of their
// like parts, not one each, and decode them once. What it gives out is
// shared, so read-only, as every decoded part of a cached object is.
type SharedDecoder[V any] struct{ shards *internShards[V] }

// NewSharedDecoder keeps values decoded from up to maxBytes of JSON (what
// they take decoded is some times that), none from a value longer than
// maxValue.
func NewSharedDecoder[V any](maxBytes, maxValue int) *SharedDecoder[V] {
	return &SharedDecoder[V]{shards: newInternShards[V](maxBytes, maxValue)}
}

// Decode returns the value kept for data, else data decoded (as Decode
// would decode a member of an object) into a new V, kept.
func (d *SharedDecoder[V]) Decode(data []byte) (V, error) {
	var v V
	t := d.shards.shard(data)
	if len(data) > t.maxValue {
		return v, unmarshal(data, &v)
	}
	if kept, ok := t.kept(data); ok {
		return kept, nil
	}
	if err := unmarshal(data, &v); err != nil {
		return v, err
	}
	t.keep(string(data), v)
	return v, nil
}
