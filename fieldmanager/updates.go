package fieldmanager

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homeostat/homeostat/object"
)

// What the field manager makes of an update depends on the writer, the
// kind, the managed fields it replaces and the parts of the object that
// differ, alone: the fields it compares are those that differ, and the
// others keep their owners. Controllers make the same changes to many
// objects (a thousand ReplicaSets of ten going from 3 ready pods to 4,
// each settling its slots), so answers are remembered under those, with
// each part that differs whole on both sides and the times of the managed
// fields left out. The times are the only part of an answer that comes
// from elsewhere: an entry keeps the time it had in the fields replaced,
// and the writer's own takes the present when the write changed fields of
// its (which the field manager tells by moving it).

// answer is a remembered answer: its entries, each with its time taken
// from the entry of the same identity replaced or, where now is set, from
// the present.
type answer struct {
	entries []metav1.ManagedFieldsEntry
	now     []bool
}

// maxRemembered bounds the entries of an answer remembered: past ten
// update entries, the field manager merges the oldest by their times.
const maxRemembered = 8

// updated records an update, from memory when the same change was seen.
func (m *Managers) updated(manager, subresource string, live, next *object.Object) *object.Object {
	before, ok := replaced(live, next)
	if !ok || len(before) > maxRemembered {
		return m.Update(manager, subresource, live, next)
	}
	parts := object.Differing(live, next)
	key, ok := updateKey(manager, subresource, live, next, before, parts)
	if !ok {
		return m.Update(manager, subresource, live, next)
	}
	if a, ok := m.updates.get(key); ok {
		if b, err := json.Marshal(a.fill(before)); err == nil {
			next.Metadata.ManagedFields = b
			return next
		}
	}
	asked := time.Now().UTC().Truncate(time.Second)
	next = m.Update(manager, subresource, live, next)
	var after []metav1.ManagedFieldsEntry
	if json.Unmarshal(next.Metadata.ManagedFields, &after) == nil {
		if a, ok := remember(writerOf(manager, subresource), before, after, asked, changesFields(parts)); ok {
			m.updates.put(key, a)
		}
	}
	return next
}

// replaced are the managed fields an update replaces, as the field manager
// reads them: the new object's, unless it has none that decode.
func replaced(live, next *object.Object) ([]metav1.ManagedFieldsEntry, bool) {
	var es []metav1.ManagedFieldsEntry
	if json.Unmarshal(next.Metadata.ManagedFields, &es) == nil && len(es) > 0 {
		return es, true
	}
	es = nil
	if json.Unmarshal(live.Metadata.ManagedFields, &es) != nil {
		return nil, false
	}
	return es, true
}

// updateKey is what an update's managed fields depend on: the writer,
// the kind, the replaced entries without their times, and each part of
// the object that differs, whole on both sides (a list compares by its
// items' keys, which only the whole part tells).
func updateKey(manager, subresource string, live, next *object.Object, before []metav1.ManagedFieldsEntry, parts []object.Part) ([32]byte, bool) {
	if live.APIVersion != next.APIVersion || live.Kind != next.Kind {
		return [32]byte{}, false
	}
	timeless := slices.Clone(before)
	for i := range timeless {
		timeless[i].Time = nil
	}
	mf, err := json.Marshal(timeless)
	if err != nil {
		return [32]byte{}, false
	}
	h := sha256.New()
	write := func(parts ...[]byte) {
		for _, p := range parts {
			h.Write(p)
			h.Write([]byte{0})
		}
	}
	write([]byte(manager), []byte(subresource), []byte(next.APIVersion), []byte(next.Kind), mf)
	for _, p := range parts {
		write([]byte(p.Name), p.Live, p.Next)
	}
	var key [32]byte
	h.Sum(key[:0])
	return key, true
}

// identity of a managed fields entry: an object has one entry of each.
type identity struct{ manager, operation, apiVersion, subresource string }

func identityOf(e metav1.ManagedFieldsEntry) identity {
	return identity{e.Manager, string(e.Operation), e.APIVersion, e.Subresource}
}

// writerOf is the identity of the entry an update by manager through
// subresource records.
func writerOf(manager, subresource string) identity {
	return identity{manager: manager, operation: string(metav1.ManagedFieldsOperationUpdate), subresource: subresource}
}

// remember makes an answer of the field manager's, after, to an update by
// writer over entries before, asked at (or just before) asked. Each
// entry's time must be told apart: kept from before, or the present for
// the writer's own. When the writer's entry has the time it had and that
// time is not before asked, the field manager may have moved it to the
// present or not: it did if the update added or changed a field it
// records (changed), and otherwise which it is cannot be told, and the
// answer is not kept.
func remember(writer identity, before, after []metav1.ManagedFieldsEntry, asked time.Time, changed bool) (answer, bool) {
	had := map[identity]*metav1.Time{}
	for _, e := range before {
		had[identityOf(e)] = e.Time
	}
	a := answer{entries: slices.Clone(after), now: make([]bool, len(after))}
	for i, e := range after {
		id := identityOf(e)
		old, found := had[id]
		sameTime := found && (old == nil) == (e.Time == nil) && (old == nil || old.Equal(e.Time))
		mine := id.manager == writer.manager && id.operation == writer.operation && id.subresource == writer.subresource
		recent := sameTime && (old == nil || !old.Time.Before(asked))
		switch {
		case mine && recent && !changed:
			return answer{}, false
		case mine && (!sameTime || recent):
			a.now[i] = true
		case !sameTime:
			return answer{}, false // the field manager retimed another's entry: not this model
		}
		a.entries[i].Time = nil
	}
	return a, true
}

// unrecorded are the members the field manager strips from what it
// records (stripMetaManager): a change of theirs moves no entry's time.
var unrecorded = map[string]bool{"metadata.name": true, "metadata.namespace": true, "metadata.uid": true,
	"metadata.generation": true, "metadata.creationTimestamp": true}

// changesFields reports an update that surely adds or changes a field
// the field manager records: a member that differs holds, in the new
// object, a value the old one lacks or holds otherwise, found through
// objects alone. Under a list it cannot tell (a list of items by key may
// only have lost some, which changes no field), nor for a removal.
func changesFields(parts []object.Part) bool {
	for _, p := range parts {
		if unrecorded[p.Name] {
			continue
		}
		var l, n any
		if json.Unmarshal(p.Next, &n) != nil {
			continue
		}
		if len(p.Live) == 0 || json.Unmarshal(p.Live, &l) != nil {
			l = nil
		}
		if adds(l, n) {
			return true
		}
	}
	return false
}

// adds reports whether n holds, through objects alone, a value l does
// not: a scalar other than null that l lacks or holds otherwise.
func adds(l, n any) bool {
	switch nv := n.(type) {
	case map[string]any:
		lm, _ := l.(map[string]any)
		for k, v := range nv {
			if adds(lm[k], v) {
				return true
			}
		}
		return false
	case []any, nil:
		return false
	default:
		return !reflect.DeepEqual(l, n)
	}
}

// fill fills in the times of a remembered answer against the entries it
// replaces, and orders the entries as the field manager does.
func (a answer) fill(before []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	had := map[identity]*metav1.Time{}
	for _, e := range before {
		had[identityOf(e)] = e.Time
	}
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	out := slices.Clone(a.entries)
	for i := range out {
		if a.now[i] {
			out[i].Time = &now
		} else {
			out[i].Time = had[identityOf(out[i])]
		}
	}
	slices.SortFunc(out, compareEntries)
	return out
}

// compareEntries orders managed fields entries as the field manager
// encodes them: by operation, time (in seconds), manager, API version
// and subresource.
func compareEntries(p, q metav1.ManagedFieldsEntry) int {
	seconds := func(t *metav1.Time) int64 {
		if t == nil {
			return 0
		}
		return t.Unix()
	}
	return cmp.Or(cmp.Compare(p.Operation, q.Operation), cmp.Compare(seconds(p.Time), seconds(q.Time)),
		cmp.Compare(p.Manager, q.Manager), cmp.Compare(p.APIVersion, q.APIVersion), cmp.Compare(p.Subresource, q.Subresource))
}
