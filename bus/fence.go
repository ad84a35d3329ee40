package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/homeostat/homeostat/object"
)

// Fences let a controller take back a decision to create that may still be
// in flight. A controller that creates objects in fixed slots (a
// ReplicaSet's pods <name>-0, -1, …) may have a reconcile working from an
// older generation of its spec, whose creates land late: after a lost
// acknowledgement, from a connection that stalled, from another process.
// Before it counts a slot as empty for good, the controller fences it: the
// key's last entry, a tombstone, names the controller's generation that
// emptied it, and a create made on the authority of an earlier generation
// of the same controller is refused with ErrFenced. Writing the fence is a
// compare-and-swap on the key, so either the late create lands first (and
// the fence fails, showing the object) or the fence does (and the create
// fails). A deletion carries its fence on the object (FenceAnnotation), so
// the tombstone left when the object goes fences the slot too.

// FenceAnnotation, on an object being deleted and on the tombstone it
// leaves, is the generation of its controller that removed it.
const FenceAnnotation = "homeostat.io/fence"

// opFence marks a bare fence: a tombstone over a key with no object, which
// watchers pass over.
const opFence = "fence"

// Authority is the controller, at one generation of its spec, on whose
// behalf objects are created.
type Authority struct {
	Owner      string // the controller's uid
	Generation int64
}

// FenceOf is the generation of its controller that fenced o (a deleting
// object), 0 when none did.
func FenceOf(o *object.Object) int64 {
	_, gen := fenceOf(o)
	return gen
}

// fenceOf is the controller an object's fence is against, and its
// generation (0: no fence).
func fenceOf(o *object.Object) (owner string, gen int64) {
	ref, ok := o.Metadata.ControllerOf()
	if !ok {
		return "", 0
	}
	gen, _ = strconv.ParseInt(o.Metadata.Annotations[FenceAnnotation], 10, 64)
	return ref.UID, gen
}

// headerFence, on a tombstone that carries a deleted object on, is the
// fence written over it: "<owner uid>/<generation>".
const headerFence = "Homeostat-Fence"

// tombstoneFence is the fence a tombstone carries, if any.
func (s *Store) tombstoneFence(m *storedMsg) (owner string, gen int64) {
	if m == nil || !m.tombstone() || len(m.data) == 0 {
		return "", 0
	}
	if h := m.header.Get(headerFence); h != "" {
		owner, g, _ := strings.Cut(h, "/")
		gen, _ = strconv.ParseInt(g, 10, 64)
		return owner, gen
	}
	o, err := s.decode(m.subject[len(s.subjPrefix):], m.data, m.seq, layoutIn(m.header))
	if err != nil {
		return "", 0
	}
	return fenceOf(o)
}

// deletedObject is the object a tombstone says was deleted; nil for a bare
// fence, a tombstone without one, or anything else.
func (s *Store) deletedObject(m *storedMsg) *object.Object {
	if m == nil || !m.tombstone() || len(m.data) == 0 || m.header.Get(HeaderOp) == opFence {
		return nil
	}
	o, err := s.decode(m.subject[len(s.subjPrefix):], m.data, m.seq, layoutIn(m.header))
	if err != nil {
		return nil
	}
	return o
}

// fenced reports whether a tombstone refuses a create on authority a.
func (s *Store) fenced(m *storedMsg, a *Authority) bool {
	if a == nil {
		return false
	}
	owner, gen := s.tombstoneFence(m)
	return owner == a.Owner && gen > a.Generation
}

// withFence is o carrying a fence at generation gen (never lowering one).
func withFence(o *object.Object, gen int64) *object.Object {
	if gen <= 0 || FenceOf(o) >= gen {
		return o
	}
	n := o.Clone() // annotations included
	if n.Metadata.Annotations == nil {
		n.Metadata.Annotations = map[string]string{}
	}
	n.Metadata.Annotations[FenceAnnotation] = strconv.FormatInt(gen, 10)
	return n
}

// Fence makes sure key holds no object that owner's generations before gen
// may create: it writes a bare fence over an empty key, and over an object's
// tombstone a tombstone that still carries the object. When the key holds
// a live object it returns it with ErrAlreadyExists; when a fence at gen or
// later is already there, it does nothing.
func (s *Store) Fence(ctx context.Context, key string, owner object.OwnerReference, gen int64) (*object.Object, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("%w: %q is not a valid key", ErrInvalid, key)
	}
	ns, name := object.SplitKey(key, s.spec.Namespaced)
	stub := &object.Object{APIVersion: owner.APIVersion, Kind: s.spec.Kind, Metadata: object.Meta{
		Name: name, Namespace: ns, OwnerReferences: []object.OwnerReference{owner},
		Annotations: map[string]string{FenceAnnotation: strconv.FormatInt(gen, 10)},
	}}
	data, err := json.Marshal(stub)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		var expect uint64
		m, err := s.conn.lastMsg(ctx, s.stream(), s.subjPrefix+key)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("%s %q: %w", s.spec.Resource, key, err)
		case !m.tombstone():
			o, err := s.decode(key, m.data, m.seq, layoutIn(m.header))
			if err != nil {
				return nil, err
			}
			return o, fmt.Errorf("%s %q: %w", s.spec.Resource, key, ErrAlreadyExists)
		default:
			if by, at := s.tombstoneFence(m); by == owner.UID && at >= gen {
				return nil, nil
			}
			expect = m.seq
		}
		body, hdr := data, nats.Header{kvOp: []string{kvDel}, HeaderOp: []string{opFence}}
		if s.deletedObject(m) != nil {
			// The fence replaces the tombstone of an object (a key keeps
			// one entry): it carries the object on, and the fence in a
			// header, so that a watcher that has not read the tombstone yet
			// still learns of the delete, and of what was deleted.
			body = m.data
			hdr = nats.Header{kvOp: []string{kvDel}, headerFence: []string{owner.UID + "/" + strconv.FormatInt(gen, 10)}}
		}
		_, err = s.publish(ctx, key, body, expect, hdr)
		if !errors.Is(err, ErrConflict) || attempt >= 5 {
			if err != nil {
				return nil, fmt.Errorf("%s %q: fence: %w", s.spec.Resource, key, err)
			}
			return nil, nil
		}
		conflictPause(ctx, attempt)
	}
}
