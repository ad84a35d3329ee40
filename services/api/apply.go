package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
)

// Server-side apply is structured-merge-diff's, through apimachinery's
// field manager, with the types of the OpenAPI derived from the schemas:
// every object is handled as unstructured, as Kubernetes handles custom
// resources. Applies record their manager's fields under operation Apply,
// and every other write through the API under Update, so an apply
// conflicts with what another manager set.

// fieldManagers makes one field manager per kind, subresource (the
// object's, or its status's) and generation of the OpenAPI documents.
type fieldManagers struct {
	mu   sync.Mutex
	docs *openapi.Documents
	tc   managedfields.TypeConverter
	fms  map[managerKey]*managedfields.FieldManager
}

type managerKey struct {
	gvk         schema.GroupVersionKind
	subresource string
}

func (f *fieldManagers) get(d *openapi.Documents, gvk schema.GroupVersionKind, subresource string) (*managedfields.FieldManager, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.docs != d {
		tc, err := managedfields.NewTypeConverter(d.Schemas(), false)
		if err != nil {
			return nil, err
		}
		f.docs, f.tc, f.fms = d, tc, map[managerKey]*managedfields.FieldManager{}
	}
	key := managerKey{gvk, subresource}
	if fm, ok := f.fms[key]; ok {
		return fm, nil
	}
	fm, err := managedfields.NewDefaultCRDFieldManager(f.tc, sameVersion{}, noDefaults{}, unstructuredCreater{}, gvk, gvk.GroupVersion(), subresource, nil)
	if err != nil {
		return nil, err
	}
	f.fms[key] = fm
	return fm, nil
}

// Each kind has one version, so conversion is the identity.
type sameVersion struct{}

func (sameVersion) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return errors.New("api: only unstructured objects convert")
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

func (sameVersion) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}

func (sameVersion) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// Defaults are applied by the schema after the field manager has run.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (s *Service) fieldManager(ref *resourceRef) (*managedfields.FieldManager, *apiError) {
	d, err := s.openapi.Get()
	if err != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
	}
	gvk := schema.GroupVersionKind{Group: ref.res.Group, Version: ref.res.Version, Kind: ref.res.Kind}
	sub := ""
	if ref.sub == "status" {
		sub = "status"
	}
	fm, err := s.fields.get(d, gvk, sub)
	if err != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "field manager of %s: %v", ref.res.GroupResource(), err)
	}
	return fm, nil
}

func toUnstructured(o *object.Object) (*unstructured.Unstructured, *apiError) {
	b, err := object.Encode(o)
	if err != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "encoding: %v", err)
	}
	return unstructuredOf(b)
}

// unstructuredOf decodes JSON as structured-merge-diff reads it: numbers
// as int64 or float64, not json.Number.
func unstructuredOf(b []byte) (*unstructured.Unstructured, *apiError) {
	var doc map[string]any
	if err := utiljson.Unmarshal(b, &doc); err != nil || doc == nil {
		return nil, badRequest("the body is not a JSON object: %v", err)
	}
	return &unstructured.Unstructured{Object: doc}, nil
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
// Update) in n's managedFields, live being what it replaces (an empty
// object for a create). A write the field manager cannot type keeps the
// managed fields it had: tracking must never refuse a write the schema took.
func (s *Service) trackUpdate(r *http.Request, ref *resourceRef, live, n *object.Object) *object.Object {
	// A status write is recorded with subresource status, as Kubernetes
	// does; a scale as the change of the parent's replicas it is.
	if ref.sub != "" && ref.sub != "scale" && ref.sub != "status" {
		return n
	}
	fm, e := s.fieldManager(ref)
	if e != nil {
		return n
	}
	lu, e1 := toUnstructured(live)
	nu, e2 := toUnstructured(n)
	if e1 != nil || e2 != nil {
		return n
	}
	out := fm.UpdateNoErrors(lu, nu, managerOf(r))
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return n
	}
	mf, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
	if !found {
		return n
	}
	b, err := json.Marshal(mf)
	if err != nil {
		return n
	}
	n.Metadata.ManagedFields = b
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
	fm, e := s.fieldManager(ref)
	if e != nil {
		return nil, e
	}
	lu, e := toUnstructured(live)
	if e != nil {
		return nil, e
	}
	out, err := fm.Apply(lu, applied, manager, r.URL.Query().Get("force") == "true")
	if err != nil {
		return nil, applyError(err)
	}
	return out.(*unstructured.Unstructured).Object, nil
}

// applyError answers a failed apply with the Status the field manager
// made (a conflict names each field and its manager), or a 400.
func applyError(err error) *apiError {
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
