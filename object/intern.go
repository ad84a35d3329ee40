package object

import (
	"bytes"
	varint "encoding/binary"
	stdjson "encoding/json"
	"hash/maphash"
	"slices"
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

// specs holds one copy of each spec decoded lately. The pods of one
// template bound to one node have the same spec, byte for byte: at
// 100,000 pods on 5,000 nodes, twenty share each. 8 MiB keeps some
// 30,000 pod specs.
var specs = newInternShards[stdjson.RawMessage](8<<20, 4<<10)

// stringMaps holds one copy of each small string map (labels,
// annotations) seen lately on a shared object: the pods of a ReplicaSet
// have the same labels, and a map of two took 470 bytes a pod in each
// process caching them. 4 MiB keeps the labels of about 11,000 owners.
var stringMaps = newInternShards[map[string]string](4<<20, 1024)

// ownerRefs holds one copy of each list of owner references seen lately
// on a shared object: the pods of a ReplicaSet name it alike, and a list
// of one took some 200 bytes a pod in each process caching pods. 2 MiB
// keeps the lists of about 6,000 owners.
var ownerRefs = newInternShards[[]OwnerReference](2<<20, 1024)

// maxSharedMap is the most entries a shared map has: larger ones are seldom
// alike, and cost more to compare.
const maxSharedMap = 8

// ShareParts makes o's labels, annotations and owner references the ones
// kept for equal ones, keeping o's where none is. Only for an object no
// one changes in place, as the store's shared readers' objects are: Clone
// copies them, and a shared list has no room to grow.
func (o *Object) ShareParts() {
	o.Metadata.Labels = shareMap(o.Metadata.Labels)
	o.Metadata.Annotations = shareMap(o.Metadata.Annotations)
	o.Metadata.OwnerReferences = shareOwnerRefs(o.Metadata.OwnerReferences)
}

func shareOwnerRefs(refs []OwnerReference) []OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	var buf [256]byte
	return shareList(ownerRefs, refsKey(buf[:0], refs), refs, refBytes)
}

// shareList returns the list kept in s under key, keeping list (which
// the caller gives up) when none is, with no room to grow: an append to
// a shared list copies it. each is about what an element takes beyond
// its strings, which the key holds.
func shareList[E any](s *internShards[[]E], key []byte, list []E, each int) []E {
	t := s.shard(key)
	if len(key) > t.maxValue {
		return list
	}
	if kept, ok := t.kept(key); ok {
		return kept
	}
	list = list[:len(list):len(list)]
	t.keepCosting(string(key), list, len(key)+len(list)*each)
	return list
}

// refBytes is about what an owner reference takes beyond its strings:
// the struct and its two flags.
const refBytes = 112

// refsKey appends to b each reference's strings, each preceded by its
// length, and its two flags (0 for none, 1 false, 2 true), so that no
// two lists have one key.
func refsKey(b []byte, refs []OwnerReference) []byte {
	flag := func(v *bool) byte {
		switch {
		case v == nil:
			return 0
		case *v:
			return 2
		}
		return 1
	}
	for _, r := range refs {
		b = appendSized(appendSized(appendSized(appendSized(b, r.APIVersion), r.Kind), r.Name), r.UID)
		b = append(b, flag(r.Controller), flag(r.BlockOwnerDeletion))
	}
	return b
}

func shareMap(m map[string]string) map[string]string { return shareMapIn(stringMaps, m) }

func shareMapIn(s *internShards[map[string]string], m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	var buf [512]byte
	key, ok := mapKey(buf[:0], m)
	if !ok {
		return m
	}
	t := s.shard(key)
	if len(key) > t.maxValue {
		return m
	}
	if kept, ok := t.kept(key); ok {
		return kept
	}
	// A kept map costs its entries' bytes (the key holds them) and the
	// map's own.
	t.keepCosting(string(key), m, len(key)+mapBytes)
	return m
}

// mapBytes is about what a map of up to maxSharedMap strings takes beyond
// the strings: its header and one group of eight slots.
const mapBytes = 320

// mapKey appends to b m's entries in key order, each string preceded by
// its length, so that no two maps have one key; false when m has more
// than maxSharedMap entries.
func mapKey(b []byte, m map[string]string) ([]byte, bool) {
	var arr [maxSharedMap]string
	keys := arr[:0]
	for k := range m {
		if len(keys) == maxSharedMap {
			return nil, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendSized(appendSized(b, k), m[k])
	}
	return b, true
}

func appendSized(b []byte, s string) []byte {
	return append(varint.AppendUvarint(b, uint64(len(s))), s...)
}

// internShards spreads a table over shards chosen by a hash of a key, so
// that equal keys meet in one and decodes on many cores seldom wait for
// the same lock. (Chosen by length, keys of one length, as the specs of
// pods bound to nodes named alike are, all filled one shard.)
type internShards[V any] [16]internTable[V]

func newInternShards[V any](maxBytes, maxValue int) *internShards[V] {
	var s internShards[V]
	for i := range s {
		s[i] = internTable[V]{maxBytes: maxBytes / len(s), maxValue: maxValue}
	}
	return &s
}

func (s *internShards[V]) shard(key []byte) *internTable[V] {
	return &s[maphash.Bytes(shardSeed, key)%uint64(len(s))]
}

var shardSeed = maphash.MakeSeed()

// intern returns the kept copy of b's bytes, keeping b (which the caller
// gives up) when there is none. What it returns has no room to grow, so
// that an append to a shared value copies it.
func intern(s *internShards[stdjson.RawMessage], b stdjson.RawMessage) stdjson.RawMessage {
	return internIn(s.shard(b), b)
}

// internCopy is intern of a copy of b, made only when none is kept: b
// may be part of a larger buffer the caller does not give up.
func internCopy(s *internShards[stdjson.RawMessage], b []byte) stdjson.RawMessage {
	t := s.shard(b)
	if len(b) <= t.maxValue {
		if kept, ok := t.kept(b); ok {
			return kept
		}
	}
	return internIn(t, bytes.Clone(b))
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
// longer than maxValue. v counts as its key's bytes against maxBytes.
func (t *internTable[V]) keep(key string, v V) { t.keepCosting(key, v, len(key)) }

// keepCosting keeps v for key counting cost bytes against maxBytes.
func (t *internTable[V]) keepCosting(key string, v V, cost int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[key]; ok {
		return // another caller made it meanwhile; theirs stays
	}
	if t.m == nil || t.size+cost > t.maxBytes {
		t.m, t.size = map[string]V{}, 0
	}
	t.m[key] = v
	t.size += cost
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
