package fieldmanager

import (
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	json "github.com/go-json-experiment/json/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An update changes the fields of the members it changes and nothing
// else, so the managed fields it makes differ from those it replaces
// only under those members: each entry's fields elsewhere stay as they
// were. The answers remembered hold only the fields under the members
// changed, and each object's own fields elsewhere are put back around
// them. The key then holds no more than those fields either: an owned
// object's entries name its owner's uid (ownerReferences are a list by
// uid), so whole entries would make every key unique.

// fieldsPath is where a member's fields sit in an entry's fieldsV1 (nil
// for one the field manager does not record).
func fieldsPath(part string) []string {
	switch {
	case unrecorded[part]:
		return nil
	case strings.HasPrefix(part, "metadata."):
		return []string{"f:metadata", "f:" + strings.TrimPrefix(part, "metadata.")}
	case strings.HasPrefix(part, "fields."):
		return []string{"f:" + strings.TrimPrefix(part, "fields.")}
	default:
		return []string{"f:" + part}
	}
}

// fieldSet is an entry's fieldsV1, decoded.
type fieldSet map[string]any

// decodeFields decodes an entry's fields. A field set is objects alone,
// with no name twice, in valid UTF-8: what the newer decoder reads, in
// less than half the time (one that it refuses, the field manager is left
// to answer).
func decodeFields(e metav1.ManagedFieldsEntry) (fieldSet, bool) {
	fs := fieldSet{}
	if e.FieldsV1 == nil || len(e.FieldsV1.Raw) == 0 {
		return fs, true
	}
	return fs, jsonv2.Unmarshal(e.FieldsV1.Raw, (*map[string]any)(&fs)) == nil
}

// at is the subtree at path, if there is one.
func (f fieldSet) at(path []string) (any, bool) {
	var cur any = map[string]any(f)
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// cut removes the subtree at path, and the maps it leaves empty above it.
func (f fieldSet) cut(path []string) {
	var walk func(m map[string]any, path []string)
	walk = func(m map[string]any, path []string) {
		if len(path) == 1 {
			delete(m, path[0])
			return
		}
		child, ok := m[path[0]].(map[string]any)
		if !ok {
			return
		}
		walk(child, path[1:])
		if len(child) == 0 {
			delete(m, path[0])
		}
	}
	walk(f, path)
}

// put sets the subtree at path, making the maps above it.
func (f fieldSet) put(path []string, v any) {
	m := map[string]any(f)
	for _, k := range path[:len(path)-1] {
		child, ok := m[k].(map[string]any)
		if !ok {
			child = map[string]any{}
			m[k] = child
		}
		m = child
	}
	m[path[len(path)-1]] = v
}

// outside is a copy of f without the subtrees at paths.
func (f fieldSet) outside(paths [][]string) fieldSet {
	b, _ := json.Marshal(f)
	c := fieldSet{}
	_ = json.Unmarshal(b, (*map[string]any)(&c))
	return c.without(paths)
}

// without cuts the subtrees at paths from f itself, and returns it.
func (f fieldSet) without(paths [][]string) fieldSet {
	for _, p := range paths {
		f.cut(p)
	}
	return f
}
