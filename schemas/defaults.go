package schemas

import (
	"encoding/json"
	"strings"
)

// Default fills absent fields that the schema gives a default, recursing
// through properties, additionalProperties, items, allOf and $ref. Defaults
// go only where the parent object exists, as in Kubernetes' structural
// schemas, so an absent optional section stays absent. A Secret's
// stringData is folded into data here too, before validation.
func (r *Resource) Default(doc any) {
	d := defaulter{docs: r.docs}
	d.apply(doc, d.resolve(r.root, ""), r.root, 0)
	if m, ok := doc.(map[string]any); ok && r.Kind == "Secret" && r.Group == "" {
		foldStringData(m)
	}
}

type defaulter struct{ docs map[string]any }

// resolve returns the schema at url#pointer.
func (d defaulter) resolve(base, ref string) map[string]any {
	url, ptr, _ := strings.Cut(ref, "#")
	if url == "" {
		url = base
	} else if !strings.Contains(url, "://") {
		url = base[:strings.LastIndex(base, "/")+1] + url
	}
	url, _, _ = strings.Cut(url, "#")
	node, _ := d.docs[url].(map[string]any)
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if p == "" || node == nil {
			continue
		}
		node, _ = node[p].(map[string]any)
	}
	return node
}

func (d defaulter) apply(val any, sch map[string]any, base string, depth int) {
	if sch == nil || depth > 64 {
		return
	}
	if ref, ok := sch["$ref"].(string); ok {
		target := d.resolve(base, ref)
		nbase := base
		if u, _, _ := strings.Cut(ref, "#"); u != "" {
			nbase = d.absolute(base, u)
		}
		d.apply(val, target, nbase, depth+1)
	}
	if all, ok := sch["allOf"].([]any); ok {
		for _, s := range all {
			sub, _ := s.(map[string]any)
			d.apply(val, sub, base, depth+1)
		}
	}
	switch v := val.(type) {
	case map[string]any:
		props, _ := sch["properties"].(map[string]any)
		for name, ps := range props {
			psch, _ := ps.(map[string]any)
			if psch == nil {
				continue
			}
			if _, present := v[name]; !present {
				if def, ok := d.defaultOf(psch, base); ok {
					v[name] = clone(def)
				}
			}
			if child, present := v[name]; present {
				d.apply(child, psch, base, depth+1)
			}
		}
		if ap, ok := sch["additionalProperties"].(map[string]any); ok {
			for name, child := range v {
				if _, declared := props[name]; !declared {
					d.apply(child, ap, base, depth+1)
				}
			}
		}
	case []any:
		if items, ok := sch["items"].(map[string]any); ok {
			for _, child := range v {
				d.apply(child, items, base, depth+1)
			}
		}
	}
}

// defaultOf finds a default on the schema or on what it refers to.
func (d defaulter) defaultOf(sch map[string]any, base string) (any, bool) {
	if def, ok := sch["default"]; ok {
		return def, true
	}
	if ref, ok := sch["$ref"].(string); ok {
		if t := d.resolve(base, ref); t != nil {
			if def, ok := t["default"]; ok {
				return def, true
			}
		}
	}
	return nil, false
}

func (d defaulter) absolute(base, u string) string {
	if strings.Contains(u, "://") {
		return u
	}
	return base[:strings.LastIndex(base, "/")+1] + u
}

// clone is a copy of a default for a document to own, as a trip through
// JSON would make it. A schema document decodes to maps, lists, strings,
// json.Number, bools and nil, whose trip gives the same back: maps and
// lists are copied, the rest is shared, as it never changes. (The trip
// was a tenth of what a create allocated.) What a document does not
// decode to goes through JSON.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return nil
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		if v == nil {
			return nil
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	case string, json.Number, bool, nil:
		return v
	}
	return viaJSON(v)
}

// viaJSON is v written as JSON and read back as a document.
func viaJSON(v any) any {
	b, err := EncodeJSON(v)
	if err != nil {
		return v
	}
	out, err := DecodeJSON(b)
	if err != nil {
		return v
	}
	return out
}
