package api

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// aggregatedType is the media type of the aggregated discovery document,
// which client-go asks /api and /apis for first and recognizes by this
// Content-Type in the answer.
const aggregatedType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated says whether the client takes aggregated discovery.
func wantsAggregated(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == "application/json" && params["as"] == "APIGroupDiscoveryList" &&
			params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" {
			return true
		}
	}
	return false
}

// aggregated is every group (the core one for /api, the named ones for
// /apis) with its versions and their resources, in one document.
func (s *Service) aggregated(core bool) apidiscoveryv2.APIGroupDiscoveryList {
	out := apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	index := map[string]int{}
	for _, res := range s.reg.Resources() {
		if (res.Group == "") != core {
			continue
		}
		i, ok := index[res.Group]
		if !ok {
			i = len(out.Items)
			index[res.Group] = i
			out.Items = append(out.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: res.Group}})
		}
		g := &out.Items[i]
		v := len(g.Versions) - 1
		if v < 0 || g.Versions[v].Version != res.Version {
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: res.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
			v++
		}
		g.Versions[v].Resources = append(g.Versions[v].Resources, resourceDiscovery(res))
	}
	if out.Items == nil {
		out.Items = []apidiscoveryv2.APIGroupDiscovery{}
	}
	return out
}

func resourceDiscovery(res *schemas.Resource) apidiscoveryv2.APIResourceDiscovery {
	kind := &metav1.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
	scope := apidiscoveryv2.ScopeCluster
	if res.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	d := apidiscoveryv2.APIResourceDiscovery{Resource: res.Plural, ResponseKind: kind, Scope: scope,
		SingularResource: res.Singular, Verbs: verbs, ShortNames: res.ShortNames, Categories: categories(res),
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "status", ResponseKind: kind, Verbs: []string{"get", "patch", "update"}}}}
	if scalable(res) {
		d.Subresources = append(d.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: "scale",
			ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: []string{"get", "patch", "update"}})
	}
	return d
}

// serveDiscovery answers a discovery document, cacheable by its ETag.
func (s *Service) serveDiscovery(w http.ResponseWriter, r *http.Request, mediaType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeStatus(w, s.log, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err))
		return
	}
	serveDocument(w, r, mediaType, b, "")
}
