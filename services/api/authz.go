package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/rbac"
)

// authorize checks every authenticated request against RBAC before it is
// served, watches included (at their start, as Kubernetes does).
func (s *Service) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := UserFrom(r.Context())
		if !ok { // a public path, served to anyone
			next.ServeHTTP(w, r)
			return
		}
		a := requestAttributes(r, u)
		if e := s.decide(a); e != nil {
			writeStatus(w, s.log, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decide is nil when the request may go on, else why not (403, or 503
// while the caches that decide are still filling).
func (s *Service) decide(a rbac.Attributes) *apiError {
	if slices.Contains(a.Groups, GroupMasters) {
		return nil
	}
	id := s.caches()
	if !id.synced() {
		return unavailable("the API is starting: its authorization caches are not filled yet")
	}
	if rbac.Authorize(id, a).Allowed {
		return nil
	}
	return forbidden(a)
}

func forbidden(a rbac.Attributes) *apiError {
	e := newError(http.StatusForbidden, object.ReasonForbidden, "%s", rbac.Forbidden(a))
	if a.ResourceRequest {
		e.details = &object.StatusDetails{Name: a.Name, Group: a.APIGroup, Kind: a.Resource}
	}
	return e
}

// namespaceSubresources are the subresources of a Namespace, whose paths
// (/api/v1/namespaces/NAME/SUB) read like a collection in a namespace.
var namespaceSubresources = []string{"status", "finalize", "raw", "reconcile", "history", "explain"}

// requestAttributes reads what a request asks to do from its method and
// path, as Kubernetes' request info does.
func requestAttributes(r *http.Request, u *User) rbac.Attributes {
	a := rbac.Attributes{User: u.Name, Groups: u.Groups, Path: r.URL.Path}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		a.APIGroup, parts = parts[1], parts[3:]
	default:
		a.Verb = strings.ToLower(r.Method)
		if r.Method == http.MethodHead {
			a.Verb = "get"
		}
		return a
	}
	a.ResourceRequest = true
	if parts[0] == "namespaces" && len(parts) > 1 {
		// A Namespace's own namespace is itself, as in Kubernetes, so that
		// an admin of a namespace may read it.
		a.Namespace = parts[1]
		if len(parts) > 2 && !slices.Contains(namespaceSubresources, parts[2]) {
			parts = parts[2:]
		}
	}
	a.Resource = parts[0]
	if len(parts) > 1 {
		a.Name = parts[1]
	}
	if len(parts) > 2 {
		a.Subresource = parts[2]
	}
	watch := r.URL.Query().Get("watch")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch == "1" || watch == "true":
			a.Verb = "watch"
		case a.Name == "":
			a.Verb = "list"
		default:
			a.Verb = "get"
		}
	case http.MethodPost:
		a.Verb = "create"
	case http.MethodPut:
		a.Verb = "update"
	case http.MethodPatch:
		a.Verb = "patch"
	case http.MethodDelete:
		a.Verb = "delete"
		if a.Name == "" {
			a.Verb = "deletecollection"
		}
	default:
		a.Verb = strings.ToLower(r.Method)
	}
	return a
}
