package openapi_test

import (
	"encoding/json"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

// FuzzPruneAndPatch feeds arbitrary JSON to pruning and, as a strategic
// merge patch, to a Deployment: neither may panic, and pruning twice
// finds nothing the second time.
func FuzzPruneAndPatch(f *testing.F) {
	for _, s := range []string{
		`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x","bogus":1}],"dnsPolicy":"x"}}}}`,
		`{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"b"}],"containers":[{"name":"a","$patch":"delete"}]}}}}`,
		`{"metadata":{"labels":{"a":null},"finalizers":["x"],"$deleteFromPrimitiveList/finalizers":["y"]}}`,
		`{"spec":{"strategy":{"$patch":"replace"}}}`, `{"status":[1,2]}`, `[]`, `null`, `{"a":{"b":{"c":[{}]}}}`,
	} {
		f.Add([]byte(s))
	}
	reg, err := schemas.New()
	if err != nil {
		f.Fatal(err)
	}
	d, err := openapi.Build(reg.Resources())
	if err != nil {
		f.Fatal(err)
	}
	res, _ := reg.Lookup("apps", "v1", "deployments")
	sch, all, _ := d.Schema(res)
	meta := strategicpatch.PatchMetaFromOpenAPIV3{Schema: sch, SchemaList: all}
	kube := reflect.TypeFor[appsv1.Deployment]()
	cur := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","finalizers":["y"]},"spec":{"selector":{"matchLabels":{"a":"b"}},
		"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"a","command":["x"]},{"name":"b","command":["y"]}]}}}}`)
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = strategicpatch.StrategicMergePatchUsingLookupPatchMeta(cur, in, meta)
		var doc map[string]any
		if json.Unmarshal(in, &doc) != nil || doc == nil {
			return
		}
		d.Prune(res, doc, kube)
		if again := d.Prune(res, doc, kube); len(again.Unknown)+len(again.Ignored) != 0 {
			t.Fatalf("pruned twice: %+v", again)
		}
	})
}
