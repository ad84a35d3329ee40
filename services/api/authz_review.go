package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/rbac"
)

// accessReview is authorization.k8s.io/v1 SubjectAccessReview and its
// Self and Local forms: may a user do this?
type accessReview struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   object.Meta `json:"metadata"`
	Spec       struct {
		ResourceAttributes *struct {
			Namespace   string `json:"namespace,omitempty"`
			Verb        string `json:"verb,omitempty"`
			Group       string `json:"group,omitempty"`
			Version     string `json:"version,omitempty"`
			Resource    string `json:"resource,omitempty"`
			Subresource string `json:"subresource,omitempty"`
			Name        string `json:"name,omitempty"`
		} `json:"resourceAttributes,omitempty"`
		NonResourceAttributes *struct {
			Path string `json:"path,omitempty"`
			Verb string `json:"verb,omitempty"`
		} `json:"nonResourceAttributes,omitempty"`
		User   string   `json:"user,omitempty"`
		Groups []string `json:"groups,omitempty"`
	} `json:"spec"`
	Status struct {
		Allowed bool   `json:"allowed"`
		Denied  bool   `json:"denied,omitempty"`
		Reason  string `json:"reason,omitempty"`
	} `json:"status"`
}

// review answers an access review: the caller's own (self), another
// user's (the caller needs create on subjectaccessreviews, which the route
// checked), or one within a namespace (local).
func (s *Service) review(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if e := s.notReady(); e != nil {
			writeStatus(w, s.log, e)
			return
		}
		data, _, e := s.readKubeBody(r, true)
		if e != nil {
			writeStatus(w, s.log, e)
			return
		}
		var rv accessReview
		if err := json.Unmarshal(data, &rv); err != nil {
			writeStatus(w, s.log, badRequest("the body is not a %s: %v", kind, err))
			return
		}
		a, e := reviewAttributes(r, kind, &rv)
		if e != nil {
			writeStatus(w, s.log, e)
			return
		}
		id := s.caches()
		if !slices.Contains(a.Groups, GroupMasters) && !id.synced() {
			writeStatus(w, s.log, unavailable("the API is starting: its authorization caches are not filled yet"))
			return
		}
		d := rbac.Authorize(id, a)
		rv.APIVersion, rv.Kind = "authorization.k8s.io/v1", kind
		rv.Metadata.CreationTimestamp = time.Now().UTC().Truncate(time.Second)
		rv.Status.Allowed, rv.Status.Reason = d.Allowed, d.Reason
		writeJSON(w, http.StatusCreated, rv)
	}
}

// reviewAttributes are the attributes a review asks about.
func reviewAttributes(r *http.Request, kind string, rv *accessReview) (rbac.Attributes, *apiError) {
	var a rbac.Attributes
	switch kind {
	case "SelfSubjectAccessReview":
		u, _ := UserFrom(r.Context())
		a.User, a.Groups = u.Name, u.Groups
	default:
		if rv.Spec.User == "" && len(rv.Spec.Groups) == 0 {
			return a, badRequest("%s: spec.user or spec.groups is required", kind)
		}
		a.User, a.Groups = rv.Spec.User, rv.Spec.Groups
	}
	ra, na := rv.Spec.ResourceAttributes, rv.Spec.NonResourceAttributes
	switch {
	case ra != nil && na != nil:
		return a, badRequest("%s: spec.resourceAttributes and spec.nonResourceAttributes exclude each other", kind)
	case ra != nil:
		a.ResourceRequest = true
		a.Verb, a.APIGroup, a.Resource, a.Subresource, a.Namespace, a.Name = ra.Verb, ra.Group, ra.Resource, ra.Subresource, ra.Namespace, ra.Name
		if ns := r.PathValue("ns"); kind == "LocalSubjectAccessReview" {
			if a.Namespace != "" && a.Namespace != ns {
				return a, badRequest("%s: spec.resourceAttributes.namespace %q is not the namespace of the path %q", kind, a.Namespace, ns)
			}
			a.Namespace = ns
		}
	case na != nil:
		a.Verb, a.Path = na.Verb, na.Path
	default:
		return a, badRequest("%s: spec.resourceAttributes or spec.nonResourceAttributes is required", kind)
	}
	if a.Verb == "" {
		return a, badRequest("%s: the verb is required", kind)
	}
	return a, nil
}

// impersonate makes a request another user's, as the Impersonate-User and
// Impersonate-Group headers ask (kubectl --as, --as-group), when the real
// user may impersonate them.
func (s *Service) impersonate(r *http.Request, real *User) (*User, *apiError) {
	name, groups := r.Header.Get("Impersonate-User"), r.Header.Values("Impersonate-Group")
	if name == "" {
		return nil, badRequest("Impersonate-Group needs Impersonate-User")
	}
	check := func(resource, ns, n string) *apiError {
		return s.decide(rbac.Attributes{User: real.Name, Groups: real.Groups, Verb: "impersonate", ResourceRequest: true,
			Resource: resource, Namespace: ns, Name: n})
	}
	u := &User{Name: name}
	if rest, ok := strings.CutPrefix(name, "system:serviceaccount:"); ok {
		ns, sa, _ := strings.Cut(rest, ":")
		if e := check("serviceaccounts", ns, sa); e != nil {
			return nil, e
		}
		u.Groups = append(u.Groups, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	} else if e := check("users", "", name); e != nil {
		return nil, e
	}
	for _, g := range groups {
		if e := check("groups", "", g); e != nil {
			return nil, e
		}
		u.Groups = append(u.Groups, g)
	}
	u.Groups = append(u.Groups, GroupAuthenticated)
	return u, nil
}
