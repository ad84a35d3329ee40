package fieldmanager

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// A place is where a value sits in its kind's type, as the field manager
// types it: what tells a list it takes item by item, by keys (the
// conditions of a status, the containers of a pod), from one it takes
// whole. The zero place is of no known type.
type place struct {
	s  *smdschema.Schema
	tr smdschema.TypeRef
}

func (p place) atom() (smdschema.Atom, bool) {
	if p.s == nil {
		return smdschema.Atom{}, false
	}
	return p.s.Resolve(p.tr)
}

// field is the place of a member of the object at p.
func (p place) field(name string) place {
	a, ok := p.atom()
	if !ok || a.Map == nil {
		return place{}
	}
	if f, ok := a.Map.FindField(name); ok {
		return place{p.s, f.Type}
	}
	if len(a.Map.Fields) > 0 {
		return place{}
	}
	return place{p.s, a.Map.ElementType}
}

// keyed reports the keys of the list at p when the field manager takes it
// item by item by those keys, with the place of its items.
func (p place) keyed() ([]string, place, bool) {
	a, ok := p.atom()
	if !ok || a.List == nil || a.List.ElementRelationship != smdschema.Associative || len(a.List.Keys) == 0 {
		return nil, place{}, false
	}
	return a.List.Keys, place{p.s, a.List.ElementType}, true
}

// partPlace is the place of a member Differing names ("spec",
// "metadata.labels", "fields.data") in an object whose type is at root.
func partPlace(root place, part string) place {
	switch path := fieldsPath(part); len(path) {
	case 1:
		return root.field(path[0][len("f:"):])
	case 2:
		return root.field(path[0][len("f:"):]).field(path[1][len("f:"):])
	}
	return place{}
}

// root is the place of a kind's objects, found once per generation of the
// documents (the zero place when the field manager has no type for it).
func (m *Managers) root(apiVersion, kind string) place {
	if _, err := m.forKind(apiVersion, kind, ""); err != nil {
		return place{}
	}
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.places[gvk]; ok {
		return p
	}
	var p place
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	if tv, err := m.tc.ObjectToTyped(u); err == nil {
		p = place{tv.Schema(), tv.TypeRef()}
	}
	if m.places == nil {
		m.places = map[schema.GroupVersionKind]place{}
	}
	m.places[gvk] = p
	return p
}
