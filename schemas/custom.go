package schemas

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/homeostat/homeostat/object"
)

// DefinitionSpec is the spec of a ResourceDefinition.
type DefinitionSpec struct {
	Group      string   `json:"group"`
	Version    string   `json:"version"`
	Kind       string   `json:"kind"`
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Scope      string   `json:"scope,omitempty"`
	Categories []string `json:"categories,omitempty"`
	// PrinterColumns are kubectl get's columns for the kind.
	PrinterColumns []PrinterColumn `json:"printerColumns,omitempty"`
	Schema         json.RawMessage `json:"schema"`
}

func customSchemaURL(plural, group string) string {
	return "https://homeostat.io/custom/" + plural + "." + group + "/schema.json"
}

type customKind struct {
	group, version, kind string
	namespaced           bool
}

// compileCustom compiles a user schema inside the envelope every object
// shares. apiVersion, kind and metadata are always allowed and checked, as
// in a CustomResourceDefinition's structural schema.
func compileCustom(url string, user any, namespaced bool, k *customKind) (*Resource, error) {
	base, err := builtinDocs()
	if err != nil {
		return nil, err
	}
	um, ok := user.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the schema must be an object")
	}
	um = maps.Clone(um)
	if props, ok := um["properties"].(map[string]any); ok {
		props = maps.Clone(props)
		for _, f := range []string{"apiVersion", "kind", "metadata"} {
			if _, ok := props[f]; !ok {
				props[f] = true
			}
		}
		um["properties"] = props
	}
	envelope := map[string]any{
		"type":     "object",
		"required": []any{"apiVersion", "kind", "metadata"},
		"properties": map[string]any{
			"metadata": map[string]any{"$ref": schemaBase + "meta.yaml#/$defs/objectMeta"},
		},
	}
	if k != nil {
		props := envelope["properties"].(map[string]any)
		props["apiVersion"] = map[string]any{"const": k.group + "/" + k.version}
		props["kind"] = map[string]any{"const": k.kind}
	}
	wrapperURL := url[:len(url)-len("schema.json")] + "object.json"
	wrapper := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"allOf":   []any{envelope, map[string]any{"$ref": url}},
	}
	docs := maps.Clone(base)
	docs[url] = um
	docs[wrapperURL] = wrapper
	sch, err := newCompiler(docs).Compile(wrapperURL)
	if err != nil {
		return nil, err
	}
	return &Resource{Custom: true, Namespaced: namespaced, schema: sch, docs: docs, root: wrapperURL}, nil
}

// Register serves the kind a ResourceDefinition describes, replacing any
// earlier registration of the same group and plural.
func (r *Registry) Register(def *object.Object) (*Resource, error) {
	var spec DefinitionSpec
	if err := def.DecodeSpec(&spec); err != nil {
		return nil, fmt.Errorf("schemas: ResourceDefinition %s: %w", def.Metadata.Name, err)
	}
	if Builtin(spec.Group, spec.Plural) {
		return nil, fmt.Errorf("schemas: %s.%s is a built-in resource", spec.Plural, spec.Group)
	}
	user, err := DecodeJSON(spec.Schema)
	if err != nil {
		return nil, fmt.Errorf("schemas: ResourceDefinition %s: schema: %w", def.Metadata.Name, err)
	}
	namespaced := spec.Scope != "Cluster"
	res, err := compileCustom(customSchemaURL(spec.Plural, spec.Group), user, namespaced,
		&customKind{group: spec.Group, version: spec.Version, kind: spec.Kind, namespaced: namespaced})
	if err != nil {
		return nil, fmt.Errorf("schemas: ResourceDefinition %s: %w", def.Metadata.Name, err)
	}
	res.Group, res.Version, res.Kind, res.Plural = spec.Group, spec.Version, spec.Kind, spec.Plural
	res.Singular, res.ShortNames = spec.Singular, spec.ShortNames
	res.Categories, res.PrinterColumns = spec.Categories, spec.PrinterColumns
	if res.Singular == "" {
		res.Singular = strings.ToLower(spec.Kind) // as a CustomResourceDefinition defaults it
	}
	r.mu.Lock()
	for k, old := range r.byPath {
		if old.Custom && old.Group == spec.Group && old.Plural == spec.Plural {
			delete(r.byPath, k)
			delete(r.byKind, old.APIVersion()+"/"+old.Kind)
		}
	}
	r.mu.Unlock()
	r.add(res)
	return res, nil
}

// Unregister stops serving a custom group and plural.
func (r *Registry) Unregister(group, plural string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	for k, old := range r.byPath {
		if old.Custom && old.Group == group && old.Plural == plural {
			delete(r.byPath, k)
			delete(r.byKind, old.APIVersion()+"/"+old.Kind)
		}
	}
}
