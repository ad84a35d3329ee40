package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"sigs.k8s.io/yaml"
)

// An object or a list comes in the media type the client asks for first:
// protobuf in Kubernetes' own types for a built-in kind, YAML, or JSON;
// a kind Kubernetes does not have comes as JSON, and says so.
func TestResponsesInTheAskedMediaType(t *testing.T) {
	base := startAPI(t, conn(t))
	cms := base + "/api/v1/namespaces/default/configmaps"
	mustCode(t, call(t, "POST", cms, "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app"},"data":{"greeting":"hello"}}`), http.StatusCreated, "")
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codec := protobuf.NewSerializer(scheme, scheme)
	get := func(url, accept string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		return roundTrip(t, admin(t), req)
	}
	resp, body := get(cms+"/app", "application/vnd.kubernetes.protobuf, application/json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("Content-Type %q", ct)
	}
	obj, _, err := codec.Decode(body, nil, nil)
	if cm, ok := obj.(*corev1.ConfigMap); err != nil || !ok || cm.Name != "app" || cm.Data["greeting"] != "hello" {
		t.Fatalf("protobuf ConfigMap: %v %#v", err, obj)
	}
	_, body = get(cms, "application/vnd.kubernetes.protobuf")
	obj, _, err = codec.Decode(body, nil, nil)
	if l, ok := obj.(*corev1.ConfigMapList); err != nil || !ok || len(l.Items) != 1 || l.ResourceVersion == "" {
		t.Fatalf("protobuf ConfigMapList: %v %#v", err, obj)
	}
	resp, body = get(cms+"/app", "application/yaml")
	var y map[string]any
	if err := yaml.Unmarshal(body, &y); err != nil || resp.Header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(body), "greeting: hello") {
		t.Fatalf("YAML: %v %q\n%s", err, resp.Header.Get("Content-Type"), body)
	}
	// A ResourceDefinition has no Kubernetes type: JSON, labelled so.
	resp, body = get(base+"/apis/homeostat.io/v1/resourcedefinitions", "application/vnd.kubernetes.protobuf, application/json")
	if resp.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(string(body), "{") {
		t.Fatalf("a list of a Homeostat kind: %q\n%s", resp.Header.Get("Content-Type"), body)
	}
}

// A JSON list is written from its items' cached JSON: each item as a GET
// reads it, changes seen by the next list, pages and field selectors as
// before.
func TestJSONListsHoldTheObjectsAsRead(t *testing.T) {
	base := startAPI(t, conn(t))
	cms := base + "/api/v1/namespaces/default/configmaps"
	for _, n := range []string{"a", "b", "c"} {
		mustCode(t, call(t, "POST", cms, "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+n+`"},"data":{"v":"1"}}`), http.StatusCreated, "")
	}
	list := func(query string) corev1.ConfigMapList {
		t.Helper()
		r := call(t, "GET", cms+query, "", "")
		mustCode(t, r, http.StatusOK, "")
		var l corev1.ConfigMapList
		if err := json.Unmarshal(r.body, &l); err != nil || l.Kind != "ConfigMapList" || l.APIVersion != "v1" {
			t.Fatalf("list%s: %v\n%s", query, err, r.body)
		}
		return l
	}
	list("") // fills the cache
	mustCode(t, call(t, "PATCH", cms+"/b", "application/merge-patch+json", `{"data":{"v":"2"}}`), http.StatusOK, "")
	mustCode(t, call(t, "DELETE", cms+"/c", "", ""), http.StatusOK, "")
	l := list("")
	if len(l.Items) != 2 || l.ResourceVersion == "" {
		t.Fatalf("after a patch and a delete: %+v", l)
	}
	for _, it := range l.Items {
		var got corev1.ConfigMap
		r := call(t, "GET", cms+"/"+it.Name, "", "")
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		if it.ResourceVersion != got.ResourceVersion || it.Data["v"] != got.Data["v"] || it.UID != got.UID {
			t.Fatalf("listed %s@%s %v, read %s@%s %v", it.Name, it.ResourceVersion, it.Data, got.Name, got.ResourceVersion, got.Data)
		}
	}
	if l.Items[1].Data["v"] != "2" {
		t.Fatalf("the patch is not in the list: %v", l.Items[1].Data)
	}
	page := list("?limit=1")
	if len(page.Items) != 1 || page.Continue == "" || page.RemainingItemCount == nil || *page.RemainingItemCount != 1 {
		t.Fatalf("first page: %+v", page.ListMeta)
	}
	if sel := list("?fieldSelector=metadata.name%3Db"); len(sel.Items) != 1 || sel.Items[0].Name != "b" {
		t.Fatalf("field selector: %+v", sel.Items)
	}
}
