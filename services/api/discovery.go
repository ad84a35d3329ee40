package api

import (
	"net/http"
	"sort"

	"github.com/homeostat/homeostat/schemas"
)

type apiResource struct {
	Name         string   `json:"name"`
	SingularName string   `json:"singularName"`
	Namespaced   bool     `json:"namespaced"`
	Kind         string   `json:"kind"`
	Verbs        []string `json:"verbs"`
	ShortNames   []string `json:"shortNames,omitempty"`
	Categories   []string `json:"categories,omitempty"`
	// Group, Version and Kind name a subresource's own kind (a Scale).
	Group   string `json:"group,omitempty"`
	Version string `json:"version,omitempty"`
}

type apiResourceList struct {
	Kind         string        `json:"kind"`
	APIVersion   string        `json:"apiVersion"`
	GroupVersion string        `json:"groupVersion"`
	Resources    []apiResource `json:"resources"`
}

var verbs = []string{"create", "delete", "get", "list", "patch", "update", "watch"}

func (s *Service) apiVersions(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		s.serveDiscovery(w, r, aggregatedType, s.aggregated(true))
		return
	}
	s.serveDiscovery(w, r, "application/json", map[string]any{"kind": "APIVersions", "versions": []string{"v1"}})
}

// apiGroups lists the groups and their versions, custom ones included.
func (s *Service) apiGroups(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		s.serveDiscovery(w, r, aggregatedType, s.aggregated(false))
		return
	}
	type gv struct {
		GroupVersion string `json:"groupVersion"`
		Version      string `json:"version"`
	}
	type group struct {
		Name             string `json:"name"`
		Versions         []gv   `json:"versions"`
		PreferredVersion gv     `json:"preferredVersion"`
	}
	byName := map[string]*group{}
	for _, res := range s.reg.Resources() {
		if res.Group == "" {
			continue
		}
		g := byName[res.Group]
		if g == nil {
			g = &group{Name: res.Group}
			byName[res.Group] = g
		}
		v := gv{GroupVersion: res.APIVersion(), Version: res.Version}
		if len(g.Versions) == 0 || g.Versions[len(g.Versions)-1] != v {
			g.Versions = append(g.Versions, v)
		}
		g.PreferredVersion = g.Versions[0]
	}
	groups := make([]*group, 0, len(byName))
	for _, g := range byName {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	s.serveDiscovery(w, r, "application/json", map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

// resourceList lists the resources of one group and version.
func (s *Service) resourceList(w http.ResponseWriter, r *http.Request) {
	group, version := r.PathValue("group"), r.PathValue("version")
	out := apiResourceList{Kind: "APIResourceList", APIVersion: "v1", GroupVersion: groupVersion(group, version), Resources: []apiResource{}}
	for _, res := range s.reg.Resources() {
		if res.Group != group || res.Version != version {
			continue
		}
		out.Resources = append(out.Resources, apiResource{
			Name: res.Plural, SingularName: res.Singular, Namespaced: res.Namespaced,
			Kind: res.Kind, Verbs: verbs, ShortNames: res.ShortNames, Categories: categories(res),
		}, apiResource{Name: res.Plural + "/status", Namespaced: res.Namespaced, Kind: res.Kind, Verbs: []string{"get", "patch", "update"}})
		if scalable(res) {
			out.Resources = append(out.Resources, apiResource{Name: res.Plural + "/scale", Namespaced: res.Namespaced,
				Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: []string{"get", "patch", "update"}})
		}
	}
	if len(out.Resources) == 0 {
		writeStatus(w, s.log, newError(http.StatusNotFound, "NotFound", "no resources in %s", groupVersion(group, version)))
		return
	}
	s.serveDiscovery(w, r, "application/json", out)
}

// categories puts the workload kinds in "all", as Kubernetes does, and a
// custom kind in those its definition names, so that
// kubectl get all lists them.
func categories(res *schemas.Resource) []string {
	if res.Custom {
		return res.Categories
	}
	switch res.Kind {
	case "Pod", "Service", "Deployment", "ReplicaSet", "DaemonSet", "Job":
		return []string{"all"}
	}
	return nil
}
