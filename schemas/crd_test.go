package schemas_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// A CRD's one served version becomes a ResourceDefinition's spec, its
// OpenAPI v3.0 schema a JSON Schema; what cannot be served is named.
func TestDefinitionFromCRD(t *testing.T) {
	crd := func(versions string) *object.Object {
		o, err := object.Decode([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
			"metadata":{"name":"crontabs.stable.example.com"},"spec":{"group":"stable.example.com","scope":"Cluster",
			"names":{"kind":"CronTab","plural":"crontabs","shortNames":["ct"],"categories":["all"]},"versions":` + versions + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	def, causes := schemas.DefinitionFromCRD(crd(`[{"name":"v1beta1","served":false,"storage":false},
		{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
		"a":{"type":"string","nullable":true},"b":{"x-kubernetes-int-or-string":true},
		"c":{"type":"integer","minimum":1,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":false}}}},
		"additionalPrinterColumns":[{"name":"A","type":"string","jsonPath":".a"}]}]`))
	if len(causes) > 0 {
		t.Fatal(causes)
	}
	var sch map[string]any
	if err := json.Unmarshal(def.Schema, &sch); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "object", "properties": map[string]any{
		"a": map[string]any{"type": []any{"string", "null"}},
		"b": map[string]any{"x-kubernetes-int-or-string": true, "type": []any{"integer", "string"}},
		"c": map[string]any{"type": "integer", "exclusiveMinimum": 1.0, "maximum": 9.0}}}
	if d := cmp.Diff(want, sch); d != "" {
		t.Fatalf("schema (-want +got):\n%s", d)
	}
	if def.Version != "v1" || def.Kind != "CronTab" || def.Scope != "Cluster" || len(def.PrinterColumns) != 1 || def.Categories[0] != "all" {
		t.Fatalf("%+v", def)
	}
	for _, c := range []struct{ versions, field string }{
		{`[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{}}},{"name":"v2","served":true,"storage":false}]`, "spec.versions[1].served"},
		{`[{"name":"v1","served":false,"storage":true}]`, "spec.versions"},
		{`[{"name":"v1","served":true,"storage":false,"schema":{"openAPIV3Schema":{}}}]`, "spec.versions[0].storage"},
		{`[{"name":"v1","served":true,"storage":true}]`, "spec.versions[0].schema.openAPIV3Schema"},
	} {
		_, causes := schemas.DefinitionFromCRD(crd(c.versions))
		if len(causes) == 0 || causes[0].Field != c.field {
			t.Errorf("%s: causes %v, want one at %s", c.versions, causes, c.field)
		}
	}
}
