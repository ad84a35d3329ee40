package openapi

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/homeostat/homeostat/schemas"
)

// Patch media types the API takes; strategic merge patch only for
// built-in kinds, as Kubernetes refuses it for custom resources.
const (
	JSONPatch           = "application/json-patch+json"
	MergePatch          = "application/merge-patch+json"
	StrategicMergePatch = "application/strategic-merge-patch+json"
	ApplyPatch          = "application/apply-patch+yaml"
)

// PatchTypes lists the patch media types a resource takes.
func PatchTypes(res *schemas.Resource) []string {
	if res.Custom {
		return []string{JSONPatch, MergePatch, ApplyPatch}
	}
	return []string{JSONPatch, MergePatch, StrategicMergePatch, ApplyPatch}
}

// operation is one HTTP method on one path, before it is rendered for v2
// or v3.
type operation struct {
	method, action, id string
	body               []string // request media types; nil for none
	query              []string // query parameters
	list               bool     // answers a list rather than the kind
}

// writeParams are the query parameters of every write.
var writeParams = []string{"dryRun", "fieldManager", "fieldValidation", "pretty"}

func operations(res *schemas.Resource) (collection, item []operation) {
	scope := ""
	if res.Namespaced {
		scope = "Namespaced"
	}
	name := versionID(res) + scope + res.Kind
	collection = []operation{
		{method: "get", action: "list", id: "list" + name, query: []string{"labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "watch"}, list: true},
		{method: "post", action: "post", id: "create" + name, body: []string{"application/json", "application/yaml"}, query: writeParams},
		{method: "delete", action: "deletecollection", id: "deletecollection" + name, query: []string{"labelSelector", "fieldSelector", "dryRun"}},
	}
	item = []operation{
		{method: "get", action: "get", id: "read" + name, query: []string{"pretty"}},
		{method: "put", action: "put", id: "replace" + name, body: []string{"application/json", "application/yaml"}, query: writeParams},
		{method: "patch", action: "patch", id: "patch" + name, body: PatchTypes(res), query: append(writeParams, "force")},
		{method: "delete", action: "delete", id: "delete" + name, query: []string{"dryRun", "gracePeriodSeconds", "propagationPolicy"}},
	}
	return collection, item
}

// versionID is Kubernetes' operation id prefix: AppsV1, CoreV1.
func versionID(res *schemas.Resource) string {
	g := "Core"
	if res.Group != "" {
		g = ""
		for _, p := range strings.FieldsFunc(strings.Split(res.Group, ".")[0], func(r rune) bool { return r == '-' }) {
			g += strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return g + strings.ToUpper(res.Version[:1]) + res.Version[1:]
}

// resourcePaths are a resource's collection and item paths.
func resourcePaths(res *schemas.Resource) (string, string) {
	p := "/api/" + res.Version
	if res.Group != "" {
		p = "/apis/" + res.Group + "/" + res.Version
	}
	if res.Namespaced {
		p += "/namespaces/{namespace}"
	}
	p += "/" + res.Plural
	return p, p + "/{name}"
}

// v3Document is the OpenAPI v3 document of one group version.
func v3Document(rs []*schemas.Resource, kinds map[string]string, defs map[string]map[string]any) map[string]any {
	paths := map[string]any{}
	for _, res := range rs {
		coll, item := resourcePaths(res)
		ops, itemOps := operations(res)
		paths[coll] = v3PathItem(res, kinds[kindKey(res)], ops, pathParams(res, false))
		paths[item] = v3PathItem(res, kinds[kindKey(res)], itemOps, pathParams(res, true))
	}
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]any{"title": "Homeostat", "version": "v1"},
		"paths":      paths,
		"components": map[string]any{"schemas": defs},
	}
}

func pathParams(res *schemas.Resource, item bool) []string {
	var p []string
	if res.Namespaced {
		p = append(p, "namespace")
	}
	if item {
		p = append(p, "name")
	}
	return p
}

func v3PathItem(res *schemas.Resource, schema string, ops []operation, params []string) map[string]any {
	pi := map[string]any{}
	var ps []any
	for _, p := range params {
		ps = append(ps, map[string]any{"name": p, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	if ps != nil {
		pi["parameters"] = ps
	}
	ref := map[string]any{"$ref": refPrefix + schema}
	for _, op := range ops {
		o := opCommon(res, op)
		var qs []any
		for _, q := range op.query {
			qs = append(qs, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": "string"}})
		}
		o["parameters"] = qs
		resp := ref
		if op.list {
			resp = map[string]any{"type": "object"}
		}
		o["responses"] = map[string]any{"200": map[string]any{"description": "OK",
			"content": map[string]any{"application/json": map[string]any{"schema": resp}}}}
		if op.body != nil {
			content := map[string]any{}
			for _, mt := range op.body {
				content[mt] = map[string]any{"schema": map[string]any{"type": "object"}}
			}
			o["requestBody"] = map[string]any{"required": true, "content": content}
		}
		pi[op.method] = o
	}
	return pi
}

func opCommon(res *schemas.Resource, op operation) map[string]any {
	return map[string]any{
		"operationId":                     op.id,
		"x-kubernetes-action":             op.action,
		"x-kubernetes-group-version-kind": gvk(res),
	}
}

// v2Document is the swagger 2.0 document of every resource.
func v2Document(rs []*schemas.Resource, kinds map[string]string, defs map[string]map[string]any) map[string]any {
	paths := map[string]any{}
	for _, res := range rs {
		coll, item := resourcePaths(res)
		ops, itemOps := operations(res)
		paths[coll] = v2PathItem(res, kinds[kindKey(res)], ops, pathParams(res, false))
		paths[item] = v2PathItem(res, kinds[kindKey(res)], itemOps, pathParams(res, true))
	}
	v2defs := make(map[string]any, len(defs))
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v2defs[n] = toV2(defs[n])
	}
	return map[string]any{
		"swagger":     "2.0",
		"info":        map[string]any{"title": "Homeostat", "version": "v1"},
		"paths":       paths,
		"definitions": v2defs,
	}
}

func v2PathItem(res *schemas.Resource, schema string, ops []operation, params []string) map[string]any {
	pi := map[string]any{}
	var ps []any
	for _, p := range params {
		ps = append(ps, map[string]any{"name": p, "in": "path", "required": true, "type": "string"})
	}
	if ps != nil {
		pi["parameters"] = ps
	}
	ref := map[string]any{"$ref": "#/definitions/" + schema}
	for _, op := range ops {
		o := opCommon(res, op)
		var qs []any
		for _, q := range op.query {
			qs = append(qs, map[string]any{"name": q, "in": "query", "type": "string"})
		}
		if op.body != nil {
			o["consumes"] = op.body
			qs = append(qs, map[string]any{"name": "body", "in": "body", "required": true, "schema": map[string]any{"type": "object"}})
		}
		o["parameters"] = qs
		o["produces"] = []string{"application/json", "application/yaml"}
		resp := ref
		if op.list {
			resp = map[string]any{"type": "object"}
		}
		o["responses"] = map[string]any{"200": map[string]any{"description": "OK", "schema": resp}}
		pi[op.method] = o
	}
	return pi
}

// toV2 rewrites a v3 schema for swagger 2.0: references move to
// #/definitions/ and nullable, which 2.0 lacks, goes.
func toV2(s map[string]any) map[string]any {
	b, _ := json.Marshal(s)
	b = []byte(strings.ReplaceAll(string(b), `"`+refPrefix, `"#/definitions/`))
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	dropNullable(out)
	return out
}

func dropNullable(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["nullable"].(bool); ok {
			delete(v, "nullable")
		}
		for _, x := range v {
			dropNullable(x)
		}
	case []any:
		for _, x := range v {
			dropNullable(x)
		}
	}
}
