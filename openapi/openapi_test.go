package openapi_test

import (
	"encoding/json"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/kube-openapi/pkg/spec3"
	protomodels "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/util/proto/validation"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

func documents(t testing.TB) (*schemas.Registry, *openapi.Documents) {
	t.Helper()
	return documentsWith(t, `{"apiVersion":"homeostat.io/v1","kind":"ResourceDefinition",
		"metadata":{"name":"widgets.example.com"},
		"spec":{"group":"example.com","version":"v1","kind":"Widget","plural":"widgets",
		"schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","exclusiveMinimum":0}}}}}}}`)
}

// documentsWith are the documents of the built-in kinds and of the
// custom kind the ResourceDefinition def defines.
func documentsWith(t testing.TB, def string) (*schemas.Registry, *openapi.Documents) {
	t.Helper()
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	o, err := object.Decode([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(o); err != nil {
		t.Fatal(err)
	}
	d, err := openapi.NewCache(reg).Get()
	if err != nil {
		t.Fatal(err)
	}
	return reg, d
}

// The v2 document must survive what kubectl does with it: protobuf, then
// the models its validation and explain walk.
func TestV2ParsesAsKubectlReadsIt(t *testing.T) {
	_, d := documents(t)
	pb, err := d.V2Protobuf()
	if err != nil {
		t.Fatal(err)
	}
	var doc openapiv2.Document
	if err := proto.Unmarshal(pb, &doc); err != nil {
		t.Fatal(err)
	}
	models, err := protomodels.NewOpenAPIData(&doc)
	if err != nil {
		t.Fatalf("kubectl's models refuse the document: %v", err)
	}
	for _, name := range []string{"io.homeostat.api.apps.v1.Deployment", "io.homeostat.api.core.v1.Pod", "com.example.v1.Widget"} {
		if models.LookupModel(name) == nil {
			t.Errorf("no model %s among %d", name, len(models.ListModels()))
		}
	}
	// Client-side validation with these models accepts a valid Deployment
	// and names an unknown field.
	v := validation.ValidateModel
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": 2, "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "command": []any{"sleep", "1"}}}}}}}
	model := models.LookupModel("io.homeostat.api.apps.v1.Deployment")
	if errs := v(dep, model, "Deployment"); len(errs) != 0 {
		t.Errorf("a valid Deployment is refused: %v", errs)
	}
	dep["spec"].(map[string]any)["replicaz"] = 3
	if errs := v(dep, model, "Deployment"); len(errs) == 0 {
		t.Error("an unknown field spec.replicaz is accepted")
	}
}

// Each group version's v3 document parses, and its PATCH operations carry
// what kubectl looks for before it leaves validation to the server.
func TestV3DocumentsServeKubectl(t *testing.T) {
	_, d := documents(t)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	raw, err := d.V3Index()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	for _, gv := range []string{"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/rbac.authorization.k8s.io/v1", "apis/example.com/v1"} {
		if index.Paths[gv].ServerRelativeURL != "/openapi/v3/"+gv+"?hash="+d.V3Hash[gv] {
			t.Errorf("index entry of %s: %+v", gv, index.Paths[gv])
		}
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(d.V3["apis/apps/v1"], &doc); err != nil {
		t.Fatal(err)
	}
	patch := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].Patch
	if patch == nil {
		t.Fatal("no PATCH operation for a Deployment")
	}
	var found bool
	for _, p := range patch.Parameters {
		found = found || (p.Name == "fieldValidation" && p.In == "query")
	}
	if !found {
		t.Error("the PATCH operation has no fieldValidation parameter")
	}
	if _, ok := patch.RequestBody.Content[openapi.StrategicMergePatch]; !ok {
		t.Error("a Deployment does not take strategic merge patch")
	}
	if _, ok := doc.Components.Schemas["io.homeostat.api.apps.v1.Deployment"]; !ok {
		t.Error("no Deployment schema among the components")
	}
}

// Strategic merge patch merges containers by name with the metadata the
// documents give, and replaces a list that has no merge key.
func TestPatchMetaMergesByKey(t *testing.T) {
	reg, d := documents(t)
	res, _ := reg.Lookup("apps", "v1", "deployments")
	sch, all, ok := d.Schema(res)
	if !ok {
		t.Fatal("no schema for deployments")
	}
	meta := strategicpatch.PatchMetaFromOpenAPIV3{Schema: sch, SchemaList: all}
	cur := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a","command":["x"]},{"name":"b","command":["y"]}],
		"tolerations":[{"key":"k1"}]}}}}`)
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"v2"}],"tolerations":[{"key":"k2"}]}}}}`)
	out, err := strategicpatch.StrategicMergePatchUsingLookupPatchMeta(cur, patch, meta)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"template":{"spec":{"containers":[{"command":["x"],"name":"a"},{"command":["y"],"image":"v2","name":"b"}],"tolerations":[{"key":"k2"}]}}}}`
	if string(out) != want {
		t.Errorf("patched:\n got %s\nwant %s", out, want)
	}
}
