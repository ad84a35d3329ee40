package schemas

import (
	"encoding/json"
	"fmt"

	"github.com/homeostat/homeostat/object"
)

// A CustomResourceDefinition (apiextensions.k8s.io/v1) is served through
// the ResourceDefinition of the same name that it stands for: the API
// keeps that one in step, and everything that follows custom kinds
// follows ResourceDefinitions alone.

// PrinterColumn is a column kubectl get shows for a custom kind.
type PrinterColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format,omitempty"`
	Description string `json:"description,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
	JSONPath    string `json:"jsonPath"`
}

type crdSpec struct {
	Group string `json:"group"`
	Names struct {
		Kind       string   `json:"kind"`
		Plural     string   `json:"plural"`
		Singular   string   `json:"singular"`
		ShortNames []string `json:"shortNames"`
		Categories []string `json:"categories"`
	} `json:"names"`
	Scope    string `json:"scope"`
	Versions []struct {
		Name    string `json:"name"`
		Served  bool   `json:"served"`
		Storage bool   `json:"storage"`
		Schema  struct {
			OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
		} `json:"schema"`
		PrinterColumns []PrinterColumn `json:"additionalPrinterColumns"`
	} `json:"versions"`
	Conversion struct {
		Strategy string `json:"strategy"`
	} `json:"conversion"`
}

// DefinitionFromCRD is the ResourceDefinition spec a
// CustomResourceDefinition stands for, or the causes why Homeostat cannot
// serve it: one version only (no conversion between versions), with a
// schema.
func DefinitionFromCRD(crd *object.Object) (DefinitionSpec, []Cause) {
	var s crdSpec
	if err := crd.DecodeSpec(&s); err != nil {
		return DefinitionSpec{}, []Cause{{Field: "spec", Rule: "type", Message: err.Error()}}
	}
	var out []Cause
	if s.Conversion.Strategy == "Webhook" {
		out = append(out, Cause{Field: "spec.conversion.strategy", Rule: "supported",
			Message: "Homeostat serves one version of a kind and converts none: conversion webhooks are not supported"})
	}
	served := -1
	for i, v := range s.Versions {
		if !v.Served {
			continue
		}
		if served >= 0 {
			out = append(out, Cause{Field: fmt.Sprintf("spec.versions[%d].served", i), Rule: "supported",
				Message: "Homeostat serves one version of a kind and converts none: serve only one version"})
		}
		served = i
	}
	if served < 0 {
		return DefinitionSpec{}, append(out, Cause{Field: "spec.versions", Rule: "required", Message: "one version must be served"})
	}
	v := s.Versions[served]
	at := fmt.Sprintf("spec.versions[%d]", served)
	if !v.Storage {
		out = append(out, Cause{Field: at + ".storage", Rule: "required", Message: "the served version must be the storage version"})
	}
	if v.Schema.OpenAPIV3Schema == nil {
		out = append(out, Cause{Field: at + ".schema.openAPIV3Schema", Rule: "required", Message: "a schema is required"})
	}
	sch, err := json.Marshal(jsonSchemaOf(v.Schema.OpenAPIV3Schema))
	if err != nil {
		out = append(out, Cause{Field: at + ".schema.openAPIV3Schema", Rule: "schema", Message: err.Error()})
	}
	def := DefinitionSpec{Group: s.Group, Version: v.Name, Kind: s.Names.Kind, Plural: s.Names.Plural, Singular: s.Names.Singular,
		ShortNames: s.Names.ShortNames, Categories: s.Names.Categories, Scope: s.Scope, PrinterColumns: v.PrinterColumns, Schema: sch}
	return def, out
}

// crdChecks refuses a CustomResourceDefinition that cannot be served.
func crdChecks(doc map[string]any) []Cause {
	b, err := EncodeJSON(doc)
	if err != nil {
		return []Cause{{Field: "spec", Rule: "type", Message: err.Error()}}
	}
	o, err := object.Decode(b)
	if err != nil {
		return []Cause{{Field: "spec", Rule: "type", Message: err.Error()}}
	}
	_, causes := DefinitionFromCRD(o)
	group, _ := get(doc, "spec", "group").(string)
	plural, _ := get(doc, "spec", "names", "plural").(string)
	if name := o.Metadata.Name; name != plural+"."+group {
		causes = append(causes, Cause{Field: "metadata.name", Rule: "name",
			Message: fmt.Sprintf("must be spec.names.plural+\".\"+spec.group, here %q", plural+"."+group)})
	}
	return causes
}

// jsonSchemaOf turns an OpenAPI v3.0 schema, as a CustomResourceDefinition
// holds it, into the JSON Schema (2020-12) a ResourceDefinition holds:
// nullable becomes a null type, boolean exclusive bounds become numbers,
// and x-kubernetes-int-or-string a choice of integer or string.
func jsonSchemaOf(v any) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = jsonSchemaOf(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = jsonSchemaOf(x)
		}
		if out["x-kubernetes-int-or-string"] == true {
			out["type"] = []any{"integer", "string"}
		}
		if out["nullable"] == true {
			if typ, ok := out["type"].(string); ok {
				out["type"] = []any{typ, "null"}
			}
		}
		delete(out, "nullable")
		for _, b := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
			if ex, ok := out[b[0]].(bool); ok {
				delete(out, b[0])
				if ex {
					out[b[0]] = out[b[1]]
					delete(out, b[1])
				}
			}
		}
		return out
	}
	return v
}
