// Package fieldmanager records which manager owns which fields of an
// object, in metadata.managedFields as server-side apply keeps them. It is
// structured-merge-diff's, through apimachinery's field manager, with the
// types of the OpenAPI that package openapi derives from the schemas: every
// object is handled as unstructured, as Kubernetes handles custom
// resources.
//
// The API applies its clients' configurations and records their other
// writes with it. The controllers and the node agents write through the
// bus, not the API; they record their writes under managers of their own
// through Managers.Track, which the bus calls (bus.WithWriter).
// Tracking never refuses a write: a write whose kind the field manager
// cannot type keeps the managed fields it had.
package fieldmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
)

// Managers of the built-in and custom kinds of the documents a Cache
// derives. It is safe for concurrent use.
type Managers struct {
	docs *openapi.Cache

	mu  sync.Mutex
	at  *openapi.Documents // what tc and fms were made from
	tc  managedfields.TypeConverter
	fms map[managerKey]*managedfields.FieldManager
	// places are the kinds' types, made from tc (places.go).
	places map[schema.GroupVersionKind]place

	creates memo[[]byte]
	updates memo[answer]
	stamps  stamps
}

type managerKey struct {
	gvk         schema.GroupVersionKind
	subresource string
}

// New makes the field managers of the kinds docs describes.
func New(docs *openapi.Cache) *Managers {
	return &Managers{docs: docs}
}

// ErrUntyped: the documents have no type for the kind (or could not be
// made).
var ErrUntyped = errors.New("fieldmanager: no type for the kind")

// Warm makes the types of the documents as they are now, which the first
// write would make otherwise (the documents and their type converter, in
// the tens of milliseconds): the controllers call it as they start, so
// that their first write does not wait for them. (The API's first write
// still makes them: its tests start servers by the hundred.)
func (m *Managers) Warm() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.typesLocked()
}

// typesLocked makes the types of the documents as they are now, when
// they changed since the last made; m.mu is held.
func (m *Managers) typesLocked() error {
	d, err := m.docs.Get()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUntyped, err)
	}
	if m.at == d {
		return nil
	}
	tc, err := managedfields.NewTypeConverter(d.Schemas(), false)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUntyped, err)
	}
	m.at, m.tc, m.fms, m.places = d, tc, map[managerKey]*managedfields.FieldManager{}, nil
	// Answers of the field managers of other documents do not hold.
	m.creates.reset()
	m.updates.reset()
	m.stamps.reset()
	return nil
}

// forKind returns the field manager of a kind and subresource ("" for
// the object itself, or "status"), made once per generation of the
// documents.
func (m *Managers) forKind(apiVersion, kind, subresource string) (*managedfields.FieldManager, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUntyped, err)
	}
	gvk := gv.WithKind(kind)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.typesLocked(); err != nil {
		return nil, err
	}
	key := managerKey{gvk, subresource}
	if fm, ok := m.fms[key]; ok {
		return fm, nil
	}
	fm, err := managedfields.NewDefaultCRDFieldManager(m.tc, sameVersion{}, noDefaults{}, unstructuredCreater{}, gvk, gvk.GroupVersion(), subresource, nil)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrUntyped, gvk, err)
	}
	m.fms[key] = fm
	return fm, nil
}

// Update records next's fields under manager (operation Update) in its
// managedFields, live being what it replaces (nil for a create), and
// returns next. Subresource is "" or "status"; a status write is recorded
// with subresource status, as Kubernetes records it.
func (m *Managers) Update(manager, subresource string, live, next *object.Object) *object.Object {
	next, _ = m.update(manager, subresource, live, next)
	return next
}

// update is Update, reporting whether the field manager answered: a kind
// it cannot type, or an update it fails, leaves next as it was.
func (m *Managers) update(manager, subresource string, live, next *object.Object) (*object.Object, bool) {
	if live == nil {
		live = &object.Object{APIVersion: next.APIVersion, Kind: next.Kind}
	}
	fm, err := m.forKind(next.APIVersion, next.Kind, subresource)
	if err != nil {
		return next, false
	}
	lu, err1 := Unstructured(live)
	nu, err2 := Unstructured(next)
	if err1 != nil || err2 != nil {
		return next, false
	}
	obj, err := fm.Update(lu, nu, manager)
	if err != nil {
		// As UpdateNoErrors would have it, but keeping what next had.
		return next, false
	}
	out, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return next, false
	}
	mf, found, _ := unstructured.NestedFieldNoCopy(out.Object, "metadata", "managedFields")
	if !found {
		return next, false
	}
	b, err := json.Marshal(mf)
	if err != nil {
		return next, false
	}
	next.Metadata.ManagedFields = b
	return next, true
}

// Apply merges an applied configuration into live (an empty object of the
// kind when there is none) under manager, forcing conflicts when force is
// set. A conflict with another manager's fields is an error whose
// apierrors Status names each field and its manager.
func (m *Managers) Apply(manager string, live *object.Object, applied *unstructured.Unstructured, force bool) (map[string]any, error) {
	fm, err := m.forKind(applied.GetAPIVersion(), applied.GetKind(), "")
	if err != nil {
		return nil, err
	}
	lu, err := Unstructured(live)
	if err != nil {
		return nil, err
	}
	out, err := fm.Apply(lu, applied, manager, force)
	if err != nil {
		return nil, err
	}
	return out.(*unstructured.Unstructured).Object, nil
}

// Unstructured is o as the field manager reads it.
func Unstructured(o *object.Object) (*unstructured.Unstructured, error) {
	b, err := object.Encode(o)
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// Decode reads a JSON object as structured-merge-diff reads it: numbers as
// int64 or float64, not json.Number.
func Decode(b []byte) (*unstructured.Unstructured, error) {
	var doc map[string]any
	if err := utiljson.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, errors.New("null is not an object")
	}
	return &unstructured.Unstructured{Object: doc}, nil
}

// Each kind has one version, so conversion is the identity.
type sameVersion struct{}

func (sameVersion) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return errors.New("fieldmanager: only unstructured objects convert")
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
