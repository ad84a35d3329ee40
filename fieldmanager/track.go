package fieldmanager

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"
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
	return m.Record(manager, subresource, live, next)
}

// Record is Update, answered from memory when a write of the same shape
// was answered before (track.go, updates.go): the managed fields are
// those Update gives.
func (m *Managers) Record(manager, subresource string, live, next *object.Object) *object.Object {
	if live == nil {
		return m.created(manager, next)
	}
	return m.updated(manager, subresource, live, next)
}

// created records a create. A controller makes many objects alike (a
// ReplicaSet's pods differ only in what the field manager strips, name,
// uid, creation time, and in the values it does not compare, such as
// labels'), and the field manager's answer for one is its answer for all
// but the time, so answers are remembered by shape; and, as the shape
// takes a decoding to find, by content too.
//
// Objects of different owners differ in their owner too, and ownerReferences
// are a list by uid, so the managed fields name the owner. The answer is
// made and remembered for the object with stand-ins for its owner's uid and
// name, and the owner's own are put back in place of the stand-ins: what
// the field manager writes for a stand-in it writes for the owner's, when
// each is written as it is in JSON (owner) and no other field holds a
// stand-in (newCreate). The time is a stand-in too.
func (m *Managers) created(manager string, next *object.Object) *object.Object {
	// The field managers of the documents as they are now: answers of
	// earlier ones are forgotten when they change.
	if _, err := m.forKind(next.APIVersion, next.Kind, ""); err != nil {
		return next
	}
	c, ok := newCreate(manager, next)
	if !ok {
		return m.Update(manager, "", nil, next)
	}
	encoded, ok := m.creates.get(c.content)
	if !ok {
		shape, ok := c.shape(m.root(next.APIVersion, next.Kind))
		if !ok {
			return m.Update(manager, "", nil, next)
		}
		if encoded, ok = m.creates.get(shape); !ok {
			if encoded, ok = m.answerCreate(manager, next); !ok {
				return m.Update(manager, "", nil, next)
			}
			m.creates.put(shape, encoded)
		}
		m.creates.put(c.content, encoded)
	}
	next.Metadata.ManagedFields = m.stamps.stamp(c, encoded, time.Now())
	return next
}

// stamps remembers the managed fields of recent creates as written, with
// their owner and time in place: a ReplicaSet's pods made in the same
// second have the same, byte for byte, and share one copy of them (managed
// fields are replaced whole, never written in place).
type stamps struct {
	mu sync.Mutex
	m  map[stampKey][]byte
}

type stampKey struct {
	content         [32]byte
	now, uid, owner string
}

func (s *stamps) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = nil
}

// stamp is encoded, the answer to the create c, with c's owner and the
// second of now in place of their stand-ins.
func (s *stamps) stamp(c create, encoded []byte, now time.Time) []byte {
	k := stampKey{content: c.content, now: now.UTC().Truncate(time.Second).Format(time.RFC3339)}
	if c.owner != nil {
		k.uid, k.owner = c.owner.UID, c.owner.Name
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.m[k]; ok {
		return b
	}
	b := bytes.ReplaceAll(encoded, []byte(timeStandIn), []byte(`"time":"`+k.now+`"`))
	if c.owner != nil {
		b = bytes.ReplaceAll(b, []byte(ownerUIDStandIn), []byte(k.uid))
		b = bytes.ReplaceAll(b, []byte(ownerNameStandIn), []byte(k.owner))
	}
	// Shared, so with no room to grow: an append to it copies. (A
	// replacement that finds nothing returns a copy with room to spare.)
	b = b[:len(b):len(b)]
	if s.m == nil || len(s.m) >= memoSize {
		s.m = map[stampKey][]byte{}
	}
	s.m[k] = b
	return b
}

// answerCreate is the field manager's answer to a create of o, with
// stand-ins for its owner and time, encoded.
func (m *Managers) answerCreate(manager string, o *object.Object) ([]byte, bool) {
	standIn := o.Clone()
	standIn.Metadata.ManagedFields = nil
	if len(standIn.Metadata.OwnerReferences) == 1 {
		standIn.Metadata.OwnerReferences[0].UID, standIn.Metadata.OwnerReferences[0].Name = ownerUIDStandIn, ownerNameStandIn
	}
	standIn, answered := m.update(manager, "", nil, standIn)
	var entries []metav1.ManagedFieldsEntry
	if !answered || json.Unmarshal(standIn.Metadata.ManagedFields, &entries) != nil || len(entries) == 0 {
		return nil, false
	}
	epoch := metav1.NewTime(time.Unix(0, 0).UTC())
	for i := range entries {
		entries[i].Time = &epoch
	}
	b, ok := encodeEntries(entries)
	if !ok || bytes.Count(b, []byte(timeStandIn)) != len(entries) {
		return nil, false
	}
	return b, true
}

// The stand-ins for an owner's uid and name, and for the time, in the
// creates remembered. No field's name holds "time":" unescaped.
const (
	ownerUIDStandIn  = "fieldmanager.owner-uid.stand-in"
	ownerNameStandIn = "fieldmanager.owner-name.stand-in"
	timeStandIn      = `"time":"1970-01-01T00:00:00Z"`
)

// create is what a create's managed fields depend on: its manager, its
// kind and the object without the fields the field manager strips, its
// one owner in stand-ins, its labels' and annotations' values left out.
type create struct {
	content [32]byte // the key of the object as it is
	owner   *object.OwnerReference
	prefix  []byte // manager and kind
	encoded []byte // the object, stripped, its owner in stand-ins
}

// newCreate finds a create's key. An object that brings managed fields of
// its own is not remembered, nor one with more owners, an owner written
// otherwise in JSON, or a stand-in of its own.
func newCreate(manager string, o *object.Object) (create, bool) {
	if len(o.Metadata.ManagedFields) > 0 || len(o.Metadata.OwnerReferences) > 1 {
		return create{}, false
	}
	s := *o
	s.Metadata.Name, s.Metadata.Namespace, s.Metadata.UID, s.Metadata.ResourceVersion = "", "", "", ""
	s.Metadata.CreationTimestamp, s.Metadata.Generation = time.Time{}, 0
	s.Metadata.Labels, s.Metadata.Annotations = keysOnly(o.Metadata.Labels), keysOnly(o.Metadata.Annotations)
	c := create{prefix: []byte(manager + "\x00" + o.APIVersion + "\x00" + o.Kind + "\x00")}
	if len(o.Metadata.OwnerReferences) == 1 {
		c.owner = &o.Metadata.OwnerReferences[0]
		if !plain(c.owner.UID) || !plain(c.owner.Name) {
			return create{}, false
		}
		ref := *c.owner
		ref.UID, ref.Name = ownerUIDStandIn, ownerNameStandIn
		s.Metadata.OwnerReferences = []object.OwnerReference{ref}
	}
	b, err := object.Encode(&s)
	if err != nil || bytes.Count(b, []byte(ownerUIDStandIn)) > 1 || bytes.Count(b, []byte(ownerNameStandIn)) > 1 ||
		(c.owner == nil && (bytes.Contains(b, []byte(ownerUIDStandIn)) || bytes.Contains(b, []byte(ownerNameStandIn)))) {
		return create{}, false
	}
	c.encoded = b
	h := sha256.New()
	h.Write([]byte{'c'})
	h.Write(c.prefix)
	h.Write(b)
	h.Sum(c.content[:0])
	return c, true
}

// keysOnly is m with every value empty. Labels and annotations are maps
// the field manager takes key by key, so the managed fields of a create
// name their keys and never their values: the pods of a thousand
// Deployments labelled each for its own are one create's content, whose
// shape is found once.
func keysOnly(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = ""
	}
	return out
}

// shape is the key of the create's shape (shape.go), its kind's type at
// root.
func (c create) shape(root place) ([32]byte, bool) {
	h := sha256.New()
	h.Write([]byte{'s'})
	h.Write(c.prefix)
	var key [32]byte
	if !shapeOf(h, root, nil, c.encoded) {
		return key, false
	}
	h.Sum(key[:0])
	return key, true
}

// plain reports a string JSON writes as it is, quoted once or twice, and
// that holds no stand-in: letters, digits, '.', '-', '_' and ':'.
func plain(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '-' || r == '_' || r == ':') {
			return false
		}
	}
	return s != "" && !strings.Contains(s, ownerUIDStandIn) && !strings.Contains(s, ownerNameStandIn)
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
