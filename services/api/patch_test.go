package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/homeostat/homeostat/object"
)

const twoContainers = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"a":"1","b":"2"}},
 "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
  "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[
   {"name":"main","command":["sleep","1000"],"env":[{"name":"X","value":"1"},{"name":"Y","value":"2"}]},
   {"name":"side","command":["sleep","2000"]}]}}}}`

// containers is the part of a patched Deployment the cases look at.
type containers struct {
	Template struct {
		Spec struct {
			Containers []struct {
				Name    string   `json:"name"`
				Image   string   `json:"image"`
				Command []string `json:"command"`
				Env     []struct {
					Name, Value string
				} `json:"env"`
			} `json:"containers"`
		} `json:"spec"`
	} `json:"template"`
	Replicas int `json:"replicas"`
}

func TestPatchTypes(t *testing.T) {
	base := startAPI(t, conn(t))
	coll := base + "/apis/apps/v1/namespaces/default/deployments"
	const (
		smp   = "application/strategic-merge-patch+json"
		merge = "application/merge-patch+json"
		jsonp = "application/json-patch+json"
	)
	cases := []struct {
		name, mediaType, patch string
		code                   int
		check                  func(t *testing.T, o object.Object, c containers)
	}{
		{"strategic merges containers by name", smp,
			`{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"v2"}]}}}}`, http.StatusOK,
			func(t *testing.T, _ object.Object, c containers) {
				cs := c.Template.Spec.Containers
				if len(cs) != 2 || cs[0].Name != "main" || cs[1].Image != "v2" || cs[1].Command[1] != "2000" {
					t.Errorf("containers: %+v", cs)
				}
			}},
		{"strategic merges env by name and deletes with $patch", smp,
			`{"spec":{"template":{"spec":{"containers":[{"name":"main","env":[{"name":"Y","value":"3"},{"name":"X","$patch":"delete"}]}]}}}}`, http.StatusOK,
			func(t *testing.T, _ object.Object, c containers) {
				env := c.Template.Spec.Containers[0].Env
				if len(env) != 1 || env[0].Name != "Y" || env[0].Value != "3" {
					t.Errorf("env: %+v", env)
				}
			}},
		{"strategic orders with $setElementOrder", smp,
			`{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"main"}]}}}}`, http.StatusOK,
			func(t *testing.T, _ object.Object, c containers) {
				if cs := c.Template.Spec.Containers; cs[0].Name != "side" || cs[1].Name != "main" {
					t.Errorf("order: %s, %s", cs[0].Name, cs[1].Name)
				}
			}},
		{"strategic removes a label with null", smp, `{"metadata":{"labels":{"a":null}}}`, http.StatusOK,
			func(t *testing.T, o object.Object, _ containers) {
				if _, ok := o.Metadata.Labels["a"]; ok || o.Metadata.Labels["b"] != "2" {
					t.Errorf("labels: %v", o.Metadata.Labels)
				}
			}},
		{"merge replaces the container list", merge,
			`{"spec":{"template":{"spec":{"containers":[{"name":"only","command":["true"]}]}}}}`, http.StatusOK,
			func(t *testing.T, _ object.Object, c containers) {
				if cs := c.Template.Spec.Containers; len(cs) != 1 || cs[0].Name != "only" {
					t.Errorf("containers: %+v", cs)
				}
			}},
		{"json patch replaces and adds", jsonp,
			`[{"op":"replace","path":"/spec/replicas","value":5},{"op":"add","path":"/spec/template/spec/containers/1/image","value":"v3"}]`, http.StatusOK,
			func(t *testing.T, _ object.Object, c containers) {
				if c.Replicas != 5 || c.Template.Spec.Containers[1].Image != "v3" {
					t.Errorf("replicas %d, side image %q", c.Replicas, c.Template.Spec.Containers[1].Image)
				}
			}},
		{"json patch whose test fails", jsonp, `[{"op":"test","path":"/spec/replicas","value":9},{"op":"replace","path":"/spec/replicas","value":1}]`, http.StatusConflict, nil},
		{"json patch that is not a patch", jsonp, `{"op":"add"}`, http.StatusBadRequest, nil},
		{"json patch of a missing path", jsonp, `[{"op":"replace","path":"/spec/nothing/here","value":1}]`, http.StatusUnprocessableEntity, nil},
		{"strategic patch to an invalid object", smp, `{"spec":{"replicas":-1}}`, http.StatusUnprocessableEntity, nil},
		{"strategic patch that is not JSON", smp, `{"spec":`, http.StatusBadRequest, nil},
		{"an apply names its field manager", "application/apply-patch+yaml", `{}`, http.StatusBadRequest, nil},
		{"a patch type the API does not take", "application/x-bson", `{}`, http.StatusUnsupportedMediaType, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustCode(t, call(t, "POST", coll, "application/json", twoContainers), http.StatusCreated, "")
			defer call(t, "DELETE", coll+"/web?gracePeriodSeconds=0", "", "")
			before := call(t, "GET", coll+"/web", "", "")
			r := call(t, "PATCH", coll+"/web", tc.mediaType, tc.patch)
			if r.code != tc.code {
				t.Fatalf("got %d (%s), want %d", r.code, r.body, tc.code)
			}
			if tc.check == nil {
				// A refused patch stores nothing.
				after := call(t, "GET", coll+"/web", "", "")
				if after.obj.Metadata.ResourceVersion != before.obj.Metadata.ResourceVersion {
					t.Fatalf("a refused patch changed the object: %s", after.body)
				}
				if r.status.Kind != "Status" || r.status.Message == "" {
					t.Fatalf("the refusal has no Status: %s", r.body)
				}
				return
			}
			var c containers
			if err := json.Unmarshal(r.obj.Spec, &c); err != nil {
				t.Fatal(err)
			}
			tc.check(t, r.obj, c)
		})
	}
}

// Kubernetes refuses strategic merge patch for custom kinds, which have no
// patch strategies (kubectl then falls back to a merge patch), and protobuf.
func TestCustomKindsRefuseStrategicMergePatchAndProtobuf(t *testing.T) {
	base := startAPI(t, conn(t))
	mustCode(t, call(t, "POST", base+"/apis/homeostat.io/v1/resourcedefinitions", "application/yaml", widgetDef), http.StatusCreated, "")
	widgets := base + "/apis/example.com/v1/namespaces/default/widgets"
	mustCode(t, call(t, "POST", widgets, "", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":2}}`), http.StatusCreated, "")
	mustCode(t, call(t, "PATCH", widgets+"/w", "application/strategic-merge-patch+json", `{"spec":{"size":3}}`),
		http.StatusUnsupportedMediaType, object.ReasonUnsupportedMediaType)
	// Nor do they take protobuf, which has no type for them.
	mustCode(t, call(t, "POST", widgets, "application/vnd.kubernetes.protobuf; charset=binary", "k8s\x00"),
		http.StatusUnsupportedMediaType, object.ReasonUnsupportedMediaType)
	r := call(t, "PATCH", widgets+"/w", "application/json-patch+json", `[{"op":"replace","path":"/spec/size","value":3}]`)
	mustCode(t, r, http.StatusOK, "")
	if string(r.obj.Spec) != `{"color":"blue","size":3}` {
		t.Fatalf("spec after patch: %s", r.obj.Spec)
	}
}
