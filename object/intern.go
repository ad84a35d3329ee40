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
var managedFields = newInternShards(4<<20, 64<<10)

// internShards spreads a table over shards chosen by a value's length,
// so that equal values meet in one and decodes on many cores seldom wait
// for the same lock.
type internShards [16]internTable

func newInternShards(maxBytes, maxValue int) *internShards {
	var s internShards
	for i := range s {
		s[i] = internTable{maxBytes: maxBytes / len(s), maxValue: maxValue}
	}
	return &s
}

func (s *internShards) intern(b stdjson.RawMessage) stdjson.RawMessage {
	return s[len(b)%len(s)].intern(b)
}

// internTable is a set of byte strings, each kept once. When it holds
// maxBytes it starts again, so that values no longer decoded go; objects
// keep what they were given either way. A value longer than maxValue is
// not kept.
type internTable struct {
	maxBytes, maxValue int

	mu   sync.Mutex
	size int
	// The keys alias the values' bytes, which are never written.
	m map[string]stdjson.RawMessage
}

// intern returns the kept copy of b's bytes, keeping b (which the caller
// gives up) when there is none. What it returns has no room to grow, so
// that an append to a shared value copies it.
func (t *internTable) intern(b stdjson.RawMessage) stdjson.RawMessage {
	if len(b) == 0 {
		return b
	}
	v := b[:len(b):len(b)]
	if len(v) > t.maxValue {
		return v
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if kept, ok := t.m[string(v)]; ok {
		return kept
	}
	if t.m == nil || t.size+len(v) > t.maxBytes {
		t.m, t.size = map[string]stdjson.RawMessage{}, 0
	}
	t.m[unsafe.String(unsafe.SliceData(v), len(v))] = v
	t.size += len(v)
	return v
}
