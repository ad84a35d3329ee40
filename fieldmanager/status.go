package fieldmanager

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homeostat/homeostat/object"
)

// A status write changes nothing but the status, so what the field
// manager makes of it depends on the writer, the kind, the managed fields
// it replaces and the two statuses alone: the fields it compares are
// those that differ, and the others keep their owners. A controller
// writes the same status changes to many objects (a thousand ReplicaSets
// of ten going from 3 ready pods to 4), so answers are remembered under
// those, the times of the managed fields left out. The times are the
// only part of an answer that comes from elsewhere: an entry keeps the
// time it had in the fields replaced, and the writer's own takes the
// present when the write changed fields of its (which the field manager
// tells by moving it).

// statusAnswer is a remembered answer: its entries, each with its time
// taken from the entry of the same identity replaced or, where now is
// set, from the present.
type statusAnswer struct {
	entries []metav1.ManagedFieldsEntry
	now     []bool
}

// maxRemembered bounds the entries of an answer remembered: past ten
// update entries, the field manager merges the oldest by their times.
const maxRemembered = 8

func (m *Managers) statusWritten(manager string, live, next *object.Object) *object.Object {
	var before []metav1.ManagedFieldsEntry
	if json.Unmarshal(live.Metadata.ManagedFields, &before) != nil || len(before) > maxRemembered {
		return m.Update(manager, "status", live, next)
	}
	key, ok := statusKey(manager, live, next, before)
	if !ok {
		return m.Update(manager, "status", live, next)
	}
	if a, ok := m.statuses.get(key); ok {
		if b, err := json.Marshal(a.answer(before)); err == nil {
			next.Metadata.ManagedFields = b
			return next
		}
	}
	asked := time.Now().UTC().Truncate(time.Second)
	next = m.Update(manager, "status", live, next)
	var after []metav1.ManagedFieldsEntry
	if json.Unmarshal(next.Metadata.ManagedFields, &after) == nil {
		if a, ok := remember(manager, before, after, asked); ok {
			m.statuses.put(key, a)
		}
	}
	return next
}

// statusKey is what a status write's managed fields depend on.
func statusKey(manager string, live, next *object.Object, before []metav1.ManagedFieldsEntry) ([32]byte, bool) {
	timeless := slices.Clone(before)
	for i := range timeless {
		timeless[i].Time = nil
	}
	mf, err := json.Marshal(timeless)
	if err != nil {
		return [32]byte{}, false
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(manager), []byte(live.APIVersion), []byte(live.Kind), mf, live.Status, next.Status} {
		h.Write(part)
		h.Write([]byte{0})
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

// remember makes an answer of the field manager's, after, to a status
// write by manager over entries before, asked at (or just before) asked.
// Each entry's time must be told apart: kept from before, or the present
// for the writer's own. When the writer's entry has the time it had and
// that time is not before asked, which it is cannot be told, and the
// answer is not kept.
func remember(manager string, before, after []metav1.ManagedFieldsEntry, asked time.Time) (statusAnswer, bool) {
	had := map[identity]*metav1.Time{}
	for _, e := range before {
		had[identityOf(e)] = e.Time
	}
	a := statusAnswer{entries: slices.Clone(after), now: make([]bool, len(after))}
	for i, e := range after {
		id := identityOf(e)
		old, found := had[id]
		sameTime := found && (old == nil) == (e.Time == nil) && (old == nil || old.Equal(e.Time))
		mine := id.manager == manager && id.operation == string(metav1.ManagedFieldsOperationUpdate) && id.subresource == "status"
		switch {
		case mine && sameTime && (old == nil || !old.Time.Before(asked)):
			return statusAnswer{}, false
		case mine && !sameTime:
			a.now[i] = true
		case !sameTime:
			return statusAnswer{}, false // the field manager retimed another's entry: not this model
		}
		a.entries[i].Time = nil
	}
	return a, true
}

// answer fills in the times of a remembered answer against the entries
// it replaces, and orders the entries as the field manager does.
func (a statusAnswer) answer(before []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
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
