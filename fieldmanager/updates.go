package fieldmanager

import (
	"cmp"
	"crypto/sha256"
	"reflect"
	"slices"
	"strings"
	"time"

	json "github.com/go-json-experiment/json/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homeostat/homeostat/object"
)

// What the field manager makes of an update depends on the writer, the
// kind, the managed fields it replaces and the members of the object that
// differ, alone: the fields it compares are those that differ, and the
// others keep their owners (subtrees.go). Controllers make the same
// changes to many objects (a thousand ReplicaSets of ten going from 3
// ready pods to 4, each settling its slots), so answers are remembered
// under those: the shape of each member that differs (shape.go), and each
// entry's fields under those members, without the entries' times. The
// times come back as the field manager sets them: an entry keeps the time
// it had, and the writer's own takes the present when the update changed
// fields of its (which the field manager tells by moving it).

// answer is a remembered answer: for each entry of the field manager's,
// its fields under the members changed, and whether its time is the
// present; the other entries of an object keep theirs.
type answer struct {
	entries map[identity]answerEntry
}

type answerEntry struct {
	apiVersion, fieldsType string
	inside                 map[string]any // by fieldsPath, joined with "/"
	now                    bool
}

// maxRemembered bounds the entries of an answer remembered: past ten
// update entries, the field manager merges the oldest by their times.
const maxRemembered = 8

// updated records an update, from memory when the same change was seen.
func (m *Managers) updated(manager, subresource string, live, next *object.Object) *object.Object {
	// The field managers of the documents as they are now: answers of
	// earlier ones are forgotten when they change.
	if _, err := m.forKind(next.APIVersion, next.Kind, subresource); err != nil {
		return next
	}
	before, ok := replaced(subresource, live, next)
	if !ok || len(before) > maxRemembered || live.APIVersion != next.APIVersion || live.Kind != next.Kind {
		return m.Update(manager, subresource, live, next)
	}
	if len(before) == 0 && live.Metadata.UID != "" {
		// The field manager starts no record on an update of an object
		// that has none (one made without, as Kubernetes' leaves objects
		// older than server-side apply): its answer is next as it is.
		return next
	}
	parts := object.Differing(live, next)
	if len(parts) == 0 {
		return next // nothing the field manager compares changed: it moves nothing
	}
	paths := pathsOf(parts)
	// Each entry's fields are decoded once, for the key and the answer.
	fields := make([]fieldSet, len(before))
	for i, e := range before {
		if fields[i], ok = decodeFields(e); !ok {
			return m.Update(manager, subresource, live, next)
		}
	}
	key, ok := updateKey(m.root(next.APIVersion, next.Kind), manager, subresource, next, before, fields, parts, paths)
	if !ok {
		return m.Update(manager, subresource, live, next)
	}
	if a, ok := m.updates.get(key); ok {
		if b, ok := a.encoded(before, fields, paths); ok {
			next.Metadata.ManagedFields = b
			return next
		}
	}
	asked := time.Now().UTC().Truncate(time.Second)
	next, answered := m.update(manager, subresource, live, next)
	var after []metav1.ManagedFieldsEntry
	if answered && json.Unmarshal(next.Metadata.ManagedFields, &after) == nil {
		if a, ok := remember(writerOf(manager, subresource), before, after, paths, asked, changesFields(parts)); ok {
			m.updates.put(key, a)
		}
	}
	return next
}

// encoded is a remembered answer for an object whose managed fields were
// before (their fields decoded, which it cuts), encoded as the field
// manager's answers are (through unstructured objects, so with every
// object's members sorted); false when it holds no entry, where the field
// manager would leave the object as it was.
func (a answer) encoded(before []metav1.ManagedFieldsEntry, fields []fieldSet, paths [][]string) ([]byte, bool) {
	entries, ok := a.fill(before, fields, paths)
	if !ok || len(entries) == 0 {
		return nil, false
	}
	return encodeEntries(entries)
}

// encodeEntries encodes managed fields as the field manager does, through
// unstructured objects, so with every object's members sorted: each
// entry's members are written in that order, and its fields as they are,
// which encoding/json wrote from a map (fieldSet), so sorted too.
// Decoding and encoding them again, as the field manager does, took a
// sixth of what an answer from memory cost.
func encodeEntries(entries []metav1.ManagedFieldsEntry) ([]byte, bool) {
	b := make([]byte, 0, 256*len(entries))
	b = append(b, '[')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		w := memberWriter{b: append(b, '{')}
		w.str("apiVersion", e.APIVersion)
		w.str("fieldsType", e.FieldsType)
		if e.FieldsV1 != nil {
			if !json.Valid(e.FieldsV1.Raw) {
				return nil, false
			}
			w.raw("fieldsV1", e.FieldsV1.Raw)
		}
		w.str("manager", e.Manager)
		w.str("operation", string(e.Operation))
		w.str("subresource", e.Subresource)
		if e.Time != nil {
			t, err := e.Time.MarshalJSON()
			if err != nil {
				return nil, false
			}
			w.raw("time", t)
		}
		b = append(w.b, '}')
	}
	return append(b, ']'), true
}

// memberWriter appends an object's members, a comma between each.
type memberWriter struct {
	b    []byte
	some bool
}

// str appends a string member, none when it is empty (omitempty).
func (w *memberWriter) str(name, v string) {
	if v == "" {
		return
	}
	q, _ := json.Marshal(v) // a string always encodes
	w.raw(name, q)
}

func (w *memberWriter) raw(name string, v []byte) {
	if w.some {
		w.b = append(w.b, ',')
	}
	w.some = true
	w.b = append(w.b, '"')
	w.b = append(w.b, name...)
	w.b = append(w.b, '"', ':')
	w.b = append(w.b, v...)
}

// pathsOf are where the fields of the members parts sit.
func pathsOf(parts []object.Part) [][]string {
	var paths [][]string
	for _, p := range parts {
		if path := fieldsPath(p.Name); path != nil {
			paths = append(paths, path)
		}
	}
	return paths
}

// replaced are the managed fields an update replaces, as the field manager
// reads them: the live object's for a subresource, else the new object's
// unless it has none. New ones that ask for a reset ([] or [{}]) are not
// answered from memory.
func replaced(subresource string, live, next *object.Object) ([]metav1.ManagedFieldsEntry, bool) {
	var es []metav1.ManagedFieldsEntry
	if subresource == "" && len(next.Metadata.ManagedFields) > 0 && json.Unmarshal(next.Metadata.ManagedFields, &es) == nil {
		if es != nil && (len(es) == 0 || slices.ContainsFunc(es, func(e metav1.ManagedFieldsEntry) bool {
			return reflect.DeepEqual(e, metav1.ManagedFieldsEntry{})
		})) {
			return nil, false
		}
		if len(es) > 0 {
			return es, true
		}
	}
	es = nil
	if len(live.Metadata.ManagedFields) > 0 && json.Unmarshal(live.Metadata.ManagedFields, &es) != nil {
		return nil, false
	}
	return es, true
}

// updateKey is what an update's managed fields depend on: the writer,
// the kind, the shape of each member that differs (shape.go; root is the
// kind's type), and each replaced entry's fields (decoded, each at its
// entry's index) under those members.
func updateKey(root place, manager, subresource string, next *object.Object, before []metav1.ManagedFieldsEntry, fields []fieldSet, parts []object.Part, paths [][]string) ([32]byte, bool) {
	h := sha256.New()
	write := func(parts ...[]byte) {
		for _, p := range parts {
			h.Write(p)
			h.Write([]byte{0})
		}
	}
	write([]byte(manager), []byte(subresource), []byte(next.APIVersion), []byte(next.Kind))
	for _, p := range parts {
		write([]byte(p.Name))
		if !shapeOf(h, partPlace(root, p.Name), p.Live, p.Next) {
			return [32]byte{}, false
		}
	}
	order := make([]int, len(before))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Compare(identityOf(before[a]).String(), identityOf(before[b]).String())
	})
	for _, i := range order {
		e, fs := before[i], fields[i]
		write([]byte(identityOf(e).String()), []byte(e.FieldsType))
		for _, path := range paths {
			v, found := fs.at(path)
			b, err := json.Marshal(v)
			if err != nil {
				return [32]byte{}, false
			}
			if !found {
				b = []byte("-")
			}
			write(b)
		}
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

func (i identity) String() string {
	return i.manager + "\x00" + i.operation + "\x00" + i.apiVersion + "\x00" + i.subresource
}

// writerOf is the identity of the entry an update by manager through
// subresource records, but for its API version.
func writerOf(manager, subresource string) identity {
	return identity{manager: manager, operation: string(metav1.ManagedFieldsOperationUpdate), subresource: subresource}
}

func (i identity) is(writer identity) bool {
	return i.manager == writer.manager && i.operation == writer.operation && i.subresource == writer.subresource
}

// remember makes an answer of the field manager's, after, to an update by
// writer over entries before that changed the fields under paths, asked
// at (or just before) asked. Each entry's fields elsewhere must be as
// they were, and its time told apart: kept from before, or the present
// for the writer's own. When the writer's entry has the time it had and
// that time is not before asked, the field manager may have moved it to
// the present or not: it did if the update added or changed a field it
// records (changed); otherwise which it is cannot be told, and the answer
// is not kept. An answer that is not of this model is not kept either.
func remember(writer identity, before, after []metav1.ManagedFieldsEntry, paths [][]string, asked time.Time, changed bool) (answer, bool) {
	had := map[identity]metav1.ManagedFieldsEntry{}
	for _, e := range before {
		had[identityOf(e)] = e
	}
	a := answer{entries: map[identity]answerEntry{}}
	for _, e := range after {
		id := identityOf(e)
		old, found := had[id]
		delete(had, id)
		fs, ok := decodeFields(e)
		if !ok {
			return answer{}, false
		}
		was := fieldSet{}
		if found {
			if was, ok = decodeFields(old); !ok {
				return answer{}, false
			}
		}
		// fs is read again below, so cut from a copy; was is not.
		if !reflect.DeepEqual(fs.outside(paths), was.without(paths)) {
			return answer{}, false // fields changed outside the members changed
		}
		sameTime := found && (old.Time == nil) == (e.Time == nil) && (old.Time == nil || old.Time.Equal(e.Time))
		recent := sameTime && (old.Time == nil || !old.Time.Time.Before(asked))
		ae := answerEntry{apiVersion: e.APIVersion, fieldsType: e.FieldsType, inside: map[string]any{}}
		switch {
		case id.is(writer) && recent && !changed:
			return answer{}, false
		case id.is(writer) && (!sameTime || recent):
			ae.now = true
		case !sameTime:
			return answer{}, false // another's entry retimed: not this model
		}
		for _, path := range paths {
			if v, ok := fs.at(path); ok {
				ae.inside[strings.Join(path, "/")] = v
			}
		}
		a.entries[id] = ae
	}
	for _, e := range had { // entries the field manager dropped had no fields left
		was, ok := decodeFields(e)
		if !ok || len(was.without(paths)) > 0 {
			return answer{}, false
		}
	}
	return a, true
}

// fill makes the entries of a remembered answer for an object whose
// managed fields were before, their fields decoded (and cut here): each
// entry's fields outside paths as they were, those under paths the
// answer's, the times as the field manager sets them, ordered as it
// encodes them.
func (a answer) fill(before []metav1.ManagedFieldsEntry, fields []fieldSet, paths [][]string) ([]metav1.ManagedFieldsEntry, bool) {
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	var out []metav1.ManagedFieldsEntry
	seen := map[identity]bool{}
	emit := func(e metav1.ManagedFieldsEntry, fs fieldSet) bool {
		if len(fs) == 0 {
			return true
		}
		b, err := json.Marshal(fs)
		if err != nil {
			return false
		}
		e.FieldsV1 = &metav1.FieldsV1{Raw: b}
		out = append(out, e)
		return true
	}
	for i, e := range before {
		id := identityOf(e)
		seen[id] = true
		fs := fields[i].without(paths)
		if ae, ok := a.entries[id]; ok {
			for _, path := range paths {
				if v, ok := ae.inside[strings.Join(path, "/")]; ok {
					fs.put(path, v)
				}
			}
			if ae.now {
				e.Time = &now
			}
		}
		if !emit(e, fs) {
			return nil, false
		}
	}
	for id, ae := range a.entries {
		if seen[id] {
			continue
		}
		e := metav1.ManagedFieldsEntry{Manager: id.manager, Operation: metav1.ManagedFieldsOperationType(id.operation),
			APIVersion: ae.apiVersion, FieldsType: ae.fieldsType, Subresource: id.subresource}
		if ae.now {
			e.Time = &now
		}
		fs := fieldSet{}
		for _, path := range paths {
			if v, ok := ae.inside[strings.Join(path, "/")]; ok {
				fs.put(path, v)
			}
		}
		if !emit(e, fs) {
			return nil, false
		}
	}
	slices.SortFunc(out, compareEntries)
	return out, true
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
