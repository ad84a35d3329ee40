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
var managedFields = internTable{max: 4096}

// internTable is a set of byte strings, each kept once. When it holds max
// of them it starts again, so that values no longer decoded go; objects
// keep what they were given either way.
type internTable struct {
	max int

	mu sync.Mutex
	// The keys alias the values' bytes, which are never written.
	m map[string]stdjson.RawMessage
}

// intern returns the kept copy of b's bytes, keeping b (which the caller
// gives up) when there is none.
func (t *internTable) intern(b stdjson.RawMessage) stdjson.RawMessage {
	if len(b) == 0 {
		return b
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[string(b)]; ok {
		return v
	}
	if t.m == nil || len(t.m) >= t.max {
		t.m = make(map[string]stdjson.RawMessage, t.max/4)
	}
	// Full capacity, so that an append to a shared value copies it.
	v := b[:len(b):len(b)]
	t.m[unsafe.String(unsafe.SliceData(v), len(v))] = v
	return v
}
