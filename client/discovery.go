package client

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// Resource is a served kind, as discovery reports it.
type Resource struct {
	Group      string
	Version    string
	Kind       string
	Plural     string
	Singular   string
	ShortNames []string
	Namespaced bool
}

// APIVersion is group/version, or version for the core group.
func (r Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// GroupResource is plural.group, the name kubectl prints.
func (r Resource) GroupResource() string {
	if r.Group == "" {
		return r.Plural
	}
	return r.Plural + "." + r.Group
}

// Path is the URL path of a collection (name "") or an object.
func (r Resource) Path(namespace, name string) string {
	p := "/apis/" + r.Group + "/" + r.Version
	if r.Group == "" {
		p = "/api/" + r.Version
	}
	if r.Namespaced && namespace != "" {
		p += "/namespaces/" + namespace
	}
	p += "/" + r.Plural
	if name != "" {
		p += "/" + name
	}
	return p
}

type resourceList struct {
	GroupVersion string `json:"groupVersion"`
	Resources    []struct {
		Name         string   `json:"name"`
		SingularName string   `json:"singularName"`
		Namespaced   bool     `json:"namespaced"`
		Kind         string   `json:"kind"`
		ShortNames   []string `json:"shortNames"`
	} `json:"resources"`
}

// Resources discovers every served kind. The answer is cached; Refresh
// forgets it (after defining a new kind, say).
func (c *Client) Resources(ctx context.Context) ([]Resource, error) {
	c.mu.Lock()
	cached := c.resources
	c.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	var groups struct {
		Groups []struct {
			Versions []struct {
				GroupVersion string `json:"groupVersion"`
			} `json:"versions"`
		} `json:"groups"`
	}
	if err := c.Do(ctx, http.MethodGet, "/apis", nil, "", &groups); err != nil {
		return nil, err
	}
	paths := []string{"/api/v1"}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			paths = append(paths, "/apis/"+v.GroupVersion)
		}
	}
	var out []Resource
	for _, p := range paths {
		var rl resourceList
		if err := c.Do(ctx, http.MethodGet, p, nil, "", &rl); err != nil {
			return nil, err
		}
		group, version, found := strings.Cut(rl.GroupVersion, "/")
		if !found {
			group, version = "", rl.GroupVersion
		}
		for _, r := range rl.Resources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			out = append(out, Resource{Group: group, Version: version, Kind: r.Kind, Plural: r.Name,
				Singular: r.SingularName, ShortNames: r.ShortNames, Namespaced: r.Namespaced})
		}
	}
	c.mu.Lock()
	c.resources = out
	c.mu.Unlock()
	return out, nil
}

// Refresh drops the discovery cache.
func (c *Client) Refresh() {
	c.mu.Lock()
	c.resources = nil
	c.mu.Unlock()
}

// ResourceFor resolves what a user types — pods, pod, po, Pod,
// deployments.apps, widgets.example.com — to a served resource.
func (c *Client) ResourceFor(ctx context.Context, name string) (Resource, error) {
	all, err := c.Resources(ctx)
	if err != nil {
		return Resource{}, err
	}
	n := strings.ToLower(name)
	base, group, _ := strings.Cut(n, ".")
	for _, r := range all {
		if group != "" && r.Group != group {
			continue
		}
		if base == r.Plural || base == r.Singular || base == strings.ToLower(r.Kind) || contains(r.ShortNames, base) {
			return r, nil
		}
	}
	return Resource{}, fmt.Errorf("the server does not serve a resource type %q (see 'homeostat api-resources')", name)
}

// ResourceForKind resolves an apiVersion and kind, as in a manifest.
func (c *Client) ResourceForKind(ctx context.Context, apiVersion, kind string) (Resource, error) {
	for attempt := 0; attempt < 2; attempt++ {
		all, err := c.Resources(ctx)
		if err != nil {
			return Resource{}, err
		}
		for _, r := range all {
			if r.APIVersion() == apiVersion && r.Kind == kind {
				return r, nil
			}
		}
		// A kind defined a moment ago may be missing from the cache.
		c.Refresh()
	}
	return Resource{}, fmt.Errorf("the server does not serve kind %q in %q", kind, apiVersion)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
