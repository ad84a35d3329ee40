package openapi

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/homeostat/homeostat/schemas"
)

// Pruned are the fields Prune removed, by path.
type Pruned struct {
	// Unknown fields are declared neither by the kind's schema nor by
	// Kubernetes' type of the kind.
	Unknown []string
	// Ignored fields are Kubernetes' but not Homeostat's (dnsPolicy, say):
	// a Kubernetes client may send them, and Homeostat does not act on them.
	Ignored []string
	// Inert fields are kept but not acted on (a process pod's image), with
	// why, from the schema's x-homeostat-not-acted-on.
	Inert []InertField
}

// InertField is a field kept but not acted on.
type InertField struct{ Path, Why string }

// notActedOn marks, in the schemas, a field kept for Kubernetes clients
// that Homeostat does not act on; its value says why.
const notActedOn = "x-homeostat-not-acted-on"

// Prune removes from doc every field the kind's schema does not declare,
// as Kubernetes prunes a custom resource, and says which were Kubernetes'
// own: kube is Kubernetes' Go type of the kind (k8s.io/api), or nil.
func (d *Documents) Prune(res *schemas.Resource, doc map[string]any, kube reflect.Type) Pruned {
	var p Pruned
	if sch, ok := d.schemas[d.kinds[kindKey(res)]]; ok {
		w := pruner{all: d.schemas, props: &d.props, out: &p}
		w.walk(doc, sch, kube, "")
	}
	sort.Strings(p.Unknown)
	sort.Strings(p.Ignored)
	sort.Slice(p.Inert, func(i, j int) bool { return p.Inert[i].Path < p.Inert[j].Path })
	return p
}

type pruner struct {
	all   map[string]*spec.Schema
	props *sync.Map // Documents.props
	out   *Pruned
}

// properties is s's properties' schemas by name, each on the heap once.
// Every schema pruning reaches lives as long as its documents (one of
// theirs, a part of one, or one of these), so each is made once.
func (w pruner) properties(s *spec.Schema) map[string]*spec.Schema {
	if v, ok := w.props.Load(s); ok {
		return v.(map[string]*spec.Schema)
	}
	out := make(map[string]*spec.Schema, len(s.Properties))
	for k := range s.Properties {
		prop := s.Properties[k]
		out[k] = &prop
	}
	v, _ := w.props.LoadOrStore(s, out)
	return v.(map[string]*spec.Schema)
}

// maxHops bounds the references and allOf parts resolve follows.
const maxHops = 64

// resolve follows a schema's reference, or allOf's first part (where a
// reference with a description sits).
func (w pruner) resolve(s *spec.Schema) *spec.Schema {
	// A reference may lead back to itself (a custom kind's definition
	// that is only a reference to itself): after maxHops it is taken as
	// leading nowhere, and nothing under it is pruned.
	for hops := 0; s != nil; hops++ {
		if hops == maxHops {
			return nil
		}
		switch {
		case hasRef(&s.Ref):
			s = w.all[refName(&s.Ref)]
		case len(s.AllOf) > 0 && len(s.Properties) == 0:
			s = &s.AllOf[0]
		default:
			return s
		}
	}
	return nil
}

func (w pruner) walk(v any, s *spec.Schema, kube reflect.Type, path string) {
	s = w.resolve(s)
	if s == nil {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		w.object(v, s, kube, path)
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return
		}
		for i, x := range v {
			if container(x) {
				w.walk(x, s.Items.Schema, elem(kube), path+"["+strconv.Itoa(i)+"]")
			}
		}
	}
}

func (w pruner) object(m map[string]any, s *spec.Schema, kube reflect.Type, path string) {
	// Read as Extensions' getters read, without lowering the key (lower
	// case already) at every field.
	if open, _ := s.Extensions["x-kubernetes-preserve-unknown-fields"].(bool); open {
		return
	}
	if len(s.Properties) == 0 {
		// A map: its values share one schema.
		if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
			for k, x := range m {
				if container(x) {
					w.walk(x, ap.Schema, elem(kube), join(path, k))
				}
			}
		}
		return
	}
	props := w.properties(s)
	for k, x := range m {
		if prop, ok := props[k]; ok {
			if why, _ := prop.Extensions[notActedOn].(string); why != "" && x != nil && x != "" {
				w.out.Inert = append(w.out.Inert, InertField{Path: join(path, k), Why: why})
			}
			// Only a map or a list has fields to prune: a scalar's
			// schema is not walked.
			if container(x) {
				w.walk(x, prop, field(kube, k), join(path, k))
			}
			continue
		}
		if ap := s.AdditionalProperties; ap != nil && (ap.Allows && ap.Schema == nil) {
			continue
		}
		delete(m, k)
		if field(kube, k) != nil {
			// An empty value (creationTimestamp: null, which every typed
			// Kubernetes client sends) asks for nothing.
			if !empty(x) {
				w.out.Ignored = append(w.out.Ignored, join(path, k))
			}
		} else {
			w.out.Unknown = append(w.out.Unknown, join(path, k))
		}
	}
}

// container says whether v is a map or a list, what pruning walks into.
func container(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// hasRef says whether a schema refers to another: its reference is not
// empty.
func hasRef(r *spec.Ref) bool {
	if u := r.GetURL(); u != nil && u.Fragment != "" {
		return true
	}
	return r.String() != ""
}

// refName is the name of the schema a reference points to: its text form
// without the prefix. A reference within the document whose fragment
// needs no escaping is that text already, so its fragment is read as it
// is; writing the text escaped the fragment again for every lookup, a
// sixth of pruning. Any other goes by its text, escapes and all (a custom
// kind's schema named from a reference's text keeps them).
func refName(r *spec.Ref) string {
	if u := r.GetURL(); u != nil && u.Fragment != "" && u.RawFragment == "" && u.Scheme == "" && u.Opaque == "" &&
		u.Host == "" && u.User == nil && u.Path == "" && u.RawPath == "" && !u.ForceQuery && u.RawQuery == "" && verbatim(u.Fragment) {
		if name, ok := strings.CutPrefix(u.Fragment, refPrefix[1:]); ok {
			return name
		}
		return "#" + u.Fragment
	}
	return strings.TrimPrefix(r.String(), refPrefix)
}

// verbatim says whether a URL's fragment is written as it is: every byte
// one that fragment escaping leaves alone.
func verbatim(fragment string) bool {
	for i := range len(fragment) {
		c := fragment[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~$&+,/:;=?@!()*", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// elem is the type of a slice's or map's elements.
func elem(t reflect.Type) reflect.Type {
	t = deref(t)
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Map) {
		return t.Elem()
	}
	return nil
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// field is the type of a struct's member by its JSON name, looking into
// inlined members (TypeMeta); nil when there is none. A type's members
// are read once (fieldsOf): reading struct tags was a fifth of pruning.
func field(t reflect.Type, name string) reflect.Type {
	t = deref(t)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	return fieldsOf(t)[name]
}

// kubeFields holds each struct type's members by JSON name.
var kubeFields sync.Map // reflect.Type → map[string]reflect.Type

func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := kubeFields.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	collectFields(t, m, map[reflect.Type]bool{})
	kubeFields.Store(t, m)
	return m
}

// collectFields adds t's members to m by JSON name, the first of a name
// winning, inlined members' members where they sit among t's (a type
// inlined again inside itself adds nothing more).
func collectFields(t reflect.Type, m map[string]reflect.Type, seen map[reflect.Type]bool) {
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		// A member without a name of its own is what a member named ""
		// finds, the first such (an inlined TypeMeta, say), before any
		// inside it.
		if _, ok := m[tag]; !ok {
			m[tag] = f.Type
		}
		if tag == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			if ft := deref(f.Type); ft != nil && ft.Kind() == reflect.Struct && !seen[ft] {
				collectFields(ft, m, seen)
			}
		}
	}
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
