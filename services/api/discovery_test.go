package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
)

// TestAggregatedDiscovery: /api and /apis answer the aggregated document
// when asked for it (as client-go does first), with each resource's scope,
// verbs, short names, categories and subresources, and every discovery
// document can be revalidated by its ETag.
func TestAggregatedDiscovery(t *testing.T) {
	base := startAPI(t, conn(t))
	hc := admin(t)
	get := func(path, accept, etag string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Accept", accept)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		return roundTrip(t, hc, req)
	}
	const accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
	resp, body := get("/apis", accept, "")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
		t.Fatalf("Content-Type %q", ct)
	}
	var l apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	var deploy *apidiscoveryv2.APIResourceDiscovery
	for _, g := range l.Items {
		for _, v := range g.Versions {
			for i, r := range v.Resources {
				if g.Name == "apps" && v.Version == "v1" && r.Resource == "deployments" {
					deploy = &v.Resources[i]
				}
			}
		}
	}
	if deploy == nil || deploy.Scope != apidiscoveryv2.ScopeNamespace || deploy.SingularResource != "deployment" ||
		len(deploy.ShortNames) != 1 || len(deploy.Categories) != 1 || len(deploy.Subresources) != 2 ||
		deploy.Subresources[1].ResponseKind.Kind != "Scale" {
		t.Fatalf("deployments: %+v", deploy)
	}
	_, body = get("/api", accept, "")
	var core apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &core); err != nil || len(core.Items) != 1 || core.Items[0].Name != "" || len(core.Items[0].Versions[0].Resources) < 5 {
		t.Fatalf("/api: %v %s", err, body)
	}
	for _, path := range []string{"/api", "/apis", "/apis/apps/v1"} {
		for _, a := range []string{accept, "application/json"} {
			resp, _ = get(path, a, "")
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatalf("%s (%s): no ETag", path, a)
			}
			if again, _ := get(path, a, etag); again.StatusCode != http.StatusNotModified {
				t.Fatalf("%s (%s) with its ETag: %d", path, a, again.StatusCode)
			}
		}
	}
	// The legacy documents stay for clients that ask for plain JSON.
	resp, body = get("/apis", "application/json", "")
	var legacy struct{ Kind string }
	if err := json.Unmarshal(body, &legacy); err != nil || legacy.Kind != "APIGroupList" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("legacy /apis: %s", body)
	}
}
