package api

import (
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homeostat/homeostat/fieldmanager"
	"github.com/homeostat/homeostat/object"
)

// Server-side apply and the managed fields of every other write through
// the API are package fieldmanager's: applies record their manager's fields
// under operation Apply, and every other write under Update, so an apply
// conflicts with what another manager set.

// unstructuredOf decodes JSON as structured-merge-diff reads it.
func unstructuredOf(b []byte) (*unstructured.Unstructured, *apiError) {
	u, err := fieldmanager.Decode(b)
	if err != nil {
		return nil, badRequest("the body is not a JSON object: %v", err)
	}
	return u, nil
}

// managerOf names the field manager of a write: the fieldManager
// parameter, or the client's name from its User-Agent, as Kubernetes does.
func managerOf(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	ua, _, _ := strings.Cut(r.UserAgent(), "/")
	if ua == "" {
		return "unknown"
	}
	return ua
}

// trackUpdate records a write's fields under its manager (operation
// Update) in n's managedFields, live being what it replaces (nil for a
// create). A write the field manager cannot type keeps the managed fields
// it had: tracking must never refuse a write the schema took. Writes of
// one shape from many clients are answered from memory (Record).
func (s *Service) trackUpdate(r *http.Request, ref *resourceRef, live, n *object.Object) *object.Object {
	// A status write is recorded with subresource status, as Kubernetes
	// does; a scale as the change of the parent's replicas it is.
	switch ref.sub {
	case "", "scale":
		return s.fields.Record(managerOf(r), "", live, n)
	case "status":
		return s.fields.Record(managerOf(r), "status", live, n)
	}
	return n
}

// serverSideApply merges an applied configuration into live (an empty
// object when there is none yet) under its manager; a conflict with
// another manager's fields is a 409 naming each, unless forced.
func (s *Service) serverSideApply(r *http.Request, ref *resourceRef, live *object.Object, patch []byte) (map[string]any, *apiError) {
	manager := r.URL.Query().Get("fieldManager")
	if manager == "" {
		return nil, badRequest("fieldManager is required for apply requests")
	}
	applied, e := unstructuredOf(patch)
	if e != nil {
		return nil, e
	}
	if applied.GetAPIVersion() != ref.res.APIVersion() || applied.GetKind() != ref.res.Kind {
		return nil, badRequest("an apply to %s must name apiVersion %s and kind %s", ref.groupResource(), ref.res.APIVersion(), ref.res.Kind)
	}
	if applied.GetName() != ref.name {
		return nil, badRequest("the applied object is named %q, not %q as in the path", applied.GetName(), ref.name)
	}
	out, err := s.fields.Apply(manager, live, applied, r.URL.Query().Get("force") == "true")
	if err != nil {
		return nil, applyError(err)
	}
	return out, nil
}

// applyError answers a failed apply with the Status the field manager
// made (a conflict names each field and its manager), or a 400.
func applyError(err error) *apiError {
	if errors.Is(err, fieldmanager.ErrUntyped) {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return badRequest("the apply cannot be made: %v", err)
	}
	s := st.Status()
	e := newError(int(s.Code), string(s.Reason), "%s", s.Message)
	if s.Details != nil {
		d := &object.StatusDetails{Name: s.Details.Name, Group: s.Details.Group, Kind: s.Details.Kind}
		for _, c := range s.Details.Causes {
			d.Causes = append(d.Causes, object.StatusCause{Type: string(c.Type), Message: c.Message, Field: c.Field})
		}
		e.details = d
	}
	return e
}
