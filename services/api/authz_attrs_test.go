package api

import (
	"net/http/httptest"
	"testing"

	"github.com/homeostat/homeostat/rbac"
)

func TestRequestAttributes(t *testing.T) {
	u := &User{Name: "u", Groups: []string{"g"}}
	res := func(verb, group, resource, sub, ns, name string) rbac.Attributes {
		return rbac.Attributes{Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	for _, c := range []struct {
		method, target string
		want           rbac.Attributes
	}{
		{"GET", "/api/v1/pods", res("list", "", "pods", "", "", "")},
		{"GET", "/api/v1/namespaces/a/pods", res("list", "", "pods", "", "a", "")},
		{"GET", "/api/v1/namespaces/a/pods?watch=true", res("watch", "", "pods", "", "a", "")},
		{"GET", "/api/v1/namespaces/a/pods?watch=1&labelSelector=x", res("watch", "", "pods", "", "a", "")},
		{"GET", "/api/v1/namespaces/a/pods?watch=false", res("list", "", "pods", "", "a", "")},
		{"HEAD", "/api/v1/namespaces/a/pods/p", res("get", "", "pods", "", "a", "p")},
		{"GET", "/api/v1/namespaces/a/pods/p/log", res("get", "", "pods", "log", "a", "p")},
		{"POST", "/api/v1/namespaces/a/pods", res("create", "", "pods", "", "a", "")},
		{"PUT", "/api/v1/namespaces/a/pods/p/status", res("update", "", "pods", "status", "a", "p")},
		{"PATCH", "/apis/apps/v1/namespaces/a/deployments/d", res("patch", "apps", "deployments", "", "a", "d")},
		{"DELETE", "/apis/apps/v1/namespaces/a/deployments/d", res("delete", "apps", "deployments", "", "a", "d")},
		{"DELETE", "/apis/apps/v1/namespaces/a/deployments", res("deletecollection", "apps", "deployments", "", "a", "")},
		{"GET", "/apis/apps/v1/namespaces/a/deployments/d/reconcile", res("get", "apps", "deployments", "reconcile", "a", "d")},
		{"POST", "/api/v1/namespaces/a/serviceaccounts/bot/token", res("create", "", "serviceaccounts", "token", "a", "bot")},
		{"GET", "/api/v1/nodes/n1", res("get", "", "nodes", "", "", "n1")},
		// A Namespace is in itself, and its subresources are not a collection.
		{"GET", "/api/v1/namespaces", res("list", "", "namespaces", "", "", "")},
		{"GET", "/api/v1/namespaces/a", res("get", "", "namespaces", "", "a", "a")},
		{"DELETE", "/api/v1/namespaces/a", res("delete", "", "namespaces", "", "a", "a")},
		{"PUT", "/api/v1/namespaces/a/finalize", res("update", "", "namespaces", "finalize", "a", "a")},
		{"GET", "/api/v1/namespaces/a/status", res("get", "", "namespaces", "status", "a", "a")},
		{"POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", res("create", rbac.Group, "clusterroles", "", "", "")},
		{"GET", "/apis/example.com/v1/namespaces/a/widgets/w", res("get", "example.com", "widgets", "", "a", "w")},
		{"GET", "/apis", rbac.Attributes{Verb: "get", Path: "/apis"}},
		{"GET", "/apis/apps", rbac.Attributes{Verb: "get", Path: "/apis/apps"}},
		{"GET", "/apis/apps/v1", rbac.Attributes{Verb: "get", Path: "/apis/apps/v1"}},
		{"GET", "/api", rbac.Attributes{Verb: "get", Path: "/api"}},
		{"GET", "/api/v1", rbac.Attributes{Verb: "get", Path: "/api/v1"}},
		{"HEAD", "/metrics", rbac.Attributes{Verb: "get", Path: "/metrics"}},
		{"POST", "/debug", rbac.Attributes{Verb: "post", Path: "/debug"}},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		got := requestAttributes(r, u)
		want := c.want
		want.User, want.Groups = u.Name, u.Groups
		if want.Path == "" {
			want.Path = r.URL.Path
		}
		if got.User != want.User || got.Verb != want.Verb || got.ResourceRequest != want.ResourceRequest || got.APIGroup != want.APIGroup ||
			got.Resource != want.Resource || got.Subresource != want.Subresource || got.Namespace != want.Namespace || got.Name != want.Name || got.Path != want.Path {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.method, c.target, got, want)
		}
	}
}
