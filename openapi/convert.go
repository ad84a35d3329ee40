package openapi

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/homeostat/homeostat/schemas"
)

// refPrefix is where OpenAPI v3 keeps named schemas; the v2 document is
// derived by moving them to #/definitions/.
const refPrefix = "#/components/schemas/"

// kept are the JSON Schema keywords OpenAPI's schema object shares.
var kept = []string{"description", "default", "enum", "format", "pattern", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems",
	"uniqueItems", "required", "title"}

// converter turns JSON Schema 2020-12 documents (with $refs between them)
// into OpenAPI schema objects, each named $def becoming a named schema.
type converter struct {
	docs  map[string]any            // every document by URL
	names map[string]string         // absolute reference → schema name
	defs  map[string]map[string]any // schema name → OpenAPI schema
}

func newConverter() *converter {
	return &converter{docs: map[string]any{}, names: map[string]string{}, defs: map[string]map[string]any{}}
}

// kind converts the schema of a resource and names it after its kind.
func (c *converter) kind(res *schemas.Resource) (string, error) {
	root, docs := res.Source()
	maps.Copy(c.docs, docs)
	name := kindSchemaName(res)
	c.names[root] = name
	doc, ok := docs[root]
	if !ok {
		return "", fmt.Errorf("openapi: %s: no schema document %s", res.GroupResource(), root)
	}
	out, err := c.schema(root, doc)
	if err != nil {
		return "", fmt.Errorf("openapi: %s: %w", res.GroupResource(), err)
	}
	out["x-kubernetes-group-version-kind"] = []any{gvk(res)}
	c.defs[name] = out
	return name, nil
}

// kindSchemaName names a kind's schema as Kubernetes does: the group
// reversed, then version and kind (io.k8s.api.apps.v1.Deployment there).
func kindSchemaName(res *schemas.Resource) string {
	group := res.Group
	if group == "" {
		group = "core"
	}
	parts := strings.Split(group, ".")
	slices.Reverse(parts)
	prefix := "io.homeostat.api."
	if res.Custom {
		prefix = ""
	}
	return prefix + strings.Join(parts, ".") + "." + res.Version + "." + res.Kind
}

func gvk(res *schemas.Resource) map[string]any {
	return map[string]any{"group": res.Group, "version": res.Version, "kind": res.Kind}
}

// schema converts one schema found in the document at base.
func (c *converter) schema(base string, s any) (map[string]any, error) {
	m, ok := s.(map[string]any)
	if !ok {
		return map[string]any{}, nil // true (anything) and false alike: OpenAPI has no such schema
	}
	if ref, ok := m["$ref"].(string); ok {
		out, err := c.ref(base, ref)
		if d, ok := m["description"]; ok && err == nil {
			// A reference has no siblings in OpenAPI: a description is
			// carried beside it in allOf, as Kubernetes publishes it.
			if _, isRef := out["$ref"]; isRef {
				out = map[string]any{"allOf": []any{out}}
			}
			out["description"] = d
		}
		return out, err
	}
	if all, ok := m["allOf"].([]any); ok {
		return c.flatten(base, m, all)
	}
	out := map[string]any{}
	for _, k := range kept {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	// JSON Schema's exclusive bounds are numbers; OpenAPI's are flags on
	// minimum and maximum.
	for ex, bound := range map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"} {
		if v, ok := out[ex]; ok {
			if _, flag := v.(bool); !flag {
				out[bound], out[ex] = v, true
			}
		}
	}
	for k, v := range m {
		if strings.HasPrefix(k, "x-kubernetes-") || strings.HasPrefix(k, "x-homeostat-") {
			out[k] = v
		}
	}
	if v, ok := m["const"]; ok {
		out["enum"] = []any{v}
		if _, isString := v.(string); isString {
			out["type"] = "string"
		}
	}
	typeOf(m["type"], out)
	if err := c.members(base, m, out); err != nil {
		return nil, err
	}
	return out, nil
}

// typeOf sets OpenAPI's single type from a JSON Schema type, which may
// list several: null becomes nullable, a number or string int-or-string.
func typeOf(t any, out map[string]any) {
	switch t := t.(type) {
	case string:
		out["type"] = t
	case []any:
		var types []string
		for _, x := range t {
			if s, _ := x.(string); s == "null" {
				out["nullable"] = true
			} else if s != "" {
				types = append(types, s)
			}
		}
		switch {
		case len(types) == 1:
			out["type"] = types[0]
		case len(types) > 1:
			out["x-kubernetes-int-or-string"] = true
			delete(out, "format")
			delete(out, "pattern")
			delete(out, "minimum")
		}
	}
}

// members converts the schemas nested in m: properties, items and
// additionalProperties.
func (c *converter) members(base string, m, out map[string]any) error {
	if props, ok := m["properties"].(map[string]any); ok {
		conv := make(map[string]any, len(props))
		for name, p := range props {
			s, err := c.schema(base, p)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			conv[name] = s
		}
		out["properties"] = conv
		if out["type"] == nil {
			out["type"] = "object"
		}
	}
	if items, ok := m["items"]; ok {
		s, err := c.schema(base, items)
		if err != nil {
			return err
		}
		out["items"] = s
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		out["additionalProperties"] = ap
	case map[string]any:
		s, err := c.schema(base, ap)
		if err != nil {
			return err
		}
		out["additionalProperties"] = s
	}
	return nil
}

// flatten merges allOf's parts into one object schema, as OpenAPI
// consumers (kubectl explain, strategic merge patch) expect one.
func (c *converter) flatten(base string, m map[string]any, all []any) (map[string]any, error) {
	rest := maps.Clone(m)
	delete(rest, "allOf")
	out, err := c.schema(base, rest)
	if err != nil {
		return nil, err
	}
	for _, part := range all {
		pb, node := base, part
		if pm, ok := part.(map[string]any); ok {
			if ref, ok := pm["$ref"].(string); ok {
				if pb, node, err = c.resolve(base, ref); err != nil {
					return nil, err
				}
			}
		}
		p, err := c.schema(pb, node)
		if err != nil {
			return nil, err
		}
		mergeSchema(out, p)
	}
	return out, nil
}

// mergeSchema adds p's properties and requirements to out; where both
// describe one property, the later (narrower) part wins.
func mergeSchema(out, p map[string]any) {
	for k, v := range p {
		switch k {
		case "properties":
			props, _ := out["properties"].(map[string]any)
			if props == nil {
				props = map[string]any{}
			}
			maps.Copy(props, v.(map[string]any))
			out["properties"] = props
		case "required":
			req, _ := out["required"].([]any)
			for _, r := range v.([]any) {
				if !slices.Contains(req, r) {
					req = append(req, r)
				}
			}
			out["required"] = req
		default:
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
}

// ref converts a $ref to a reference to a named schema. An array is
// inlined instead: strategic merge patch reads a list's merge key from
// the property itself, never through a reference.
func (c *converter) ref(base, ref string) (map[string]any, error) {
	doc, node, err := c.resolve(base, ref)
	if err != nil {
		return nil, err
	}
	abs := doc + "#" + fragment(ref)
	if nm, ok := node.(map[string]any); ok && nm["type"] == "array" {
		return c.schema(doc, node)
	}
	name, ok := c.names[abs]
	if !ok {
		name = schemaName(doc, fragment(ref))
		c.names[abs] = name
		c.defs[name] = map[string]any{} // stops a recursive definition here
		s, err := c.schema(doc, node)
		if err != nil {
			return nil, err
		}
		c.defs[name] = s
	}
	return map[string]any{"$ref": refPrefix + name}, nil
}

func fragment(ref string) string {
	_, f, _ := strings.Cut(ref, "#")
	return f
}

// resolve finds the document a reference points into and the node there.
func (c *converter) resolve(base, ref string) (string, any, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", nil, err
	}
	abs := b.ResolveReference(r)
	ptr := abs.Fragment
	abs.Fragment = ""
	doc, ok := c.docs[abs.String()]
	if !ok {
		return "", nil, fmt.Errorf("unresolved reference %q", ref)
	}
	node := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("unresolved reference %q", ref)
		}
		if node, ok = m[tok]; !ok {
			return "", nil, fmt.Errorf("unresolved reference %q", ref)
		}
	}
	return abs.String(), node, nil
}

// schemaName names a $def after its document: pod.yaml#/$defs/container
// becomes io.homeostat.pod.Container.
func schemaName(doc, ptr string) string {
	u, err := url.Parse(doc)
	file := doc
	if err == nil {
		file = strings.TrimSuffix(path.Base(u.Path), path.Ext(u.Path))
		if strings.HasPrefix(u.Path, "/custom/") {
			file = "custom." + path.Base(path.Dir(u.Path))
		}
	}
	def := strings.TrimPrefix(ptr, "/$defs/")
	def = strings.ReplaceAll(strings.Trim(def, "/"), "/", ".")
	if def == "" {
		return "io.homeostat." + file
	}
	// Capitalized, as kubectl explain shows a type by its last segment
	// (<[]Container>, as for Kubernetes' own kinds).
	def = strings.ToUpper(def[:1]) + def[1:]
	return "io.homeostat." + file + "." + def
}
