package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// A CustomResourceDefinition is served through the ResourceDefinition of
// its name, which the API writes from it (marked as the CRD's) and removes
// with it. The write that stores a CRD makes its ResourceDefinition before
// it answers; every replica's watch of CRDs makes up for a write cut short.

// annotationDefinedBy marks a ResourceDefinition kept from a CRD.
const annotationDefinedBy = "homeostat.io/defined-by"

const definedByCRD = "customresourcedefinitions.apiextensions.k8s.io"

func isCRD(ref *resourceRef) bool {
	return !ref.res.Custom && ref.res.Kind == "CustomResourceDefinition"
}

// establishAny sets the status a definition of either shape reads.
func establishAny(ref *resourceRef, o *object.Object) *apiError {
	switch {
	case isDefinition(ref):
		return establish(o)
	case isCRD(ref):
		return establishCRD(o)
	}
	return nil
}

// establishCRD sets a CRD's status as Kubernetes reads it once served.
func establishCRD(crd *object.Object) *apiError {
	def, causes := schemas.DefinitionFromCRD(crd)
	if len(causes) > 0 {
		return nil // validation names them
	}
	rd := &object.Object{}
	if err := rd.SetSpec(def); err != nil {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
	}
	if e := establish(rd); e != nil {
		return e
	}
	var st map[string]any
	if err := rd.DecodeStatus(&st); err != nil {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
	}
	if names, ok := st["acceptedNames"].(map[string]any); ok {
		names["listKind"] = def.Kind + "List"
		if len(def.Categories) > 0 {
			names["categories"] = def.Categories
		}
	}
	st["storedVersions"] = []string{def.Version}
	if err := crd.SetStatus(st); err != nil {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
	}
	return nil
}

// crdNameFree refuses a CRD whose name a ResourceDefinition of its own
// holds: one kind, one definition.
func (s *Service) crdNameFree(ctx context.Context, ref *resourceRef, crd *object.Object) *apiError {
	if !isCRD(ref) {
		return nil
	}
	st, err := s.storeFor(ctx, s.reg.MustLookup("homeostat.io", "resourcedefinitions"))
	if err != nil {
		return storeError(ref, crd.Metadata.Name, err)
	}
	rd, err := st.Get(ctx, crd.Metadata.Name)
	if errors.Is(err, bus.ErrNotFound) {
		return nil
	}
	if err != nil {
		return storeError(ref, crd.Metadata.Name, err)
	}
	if rd.Metadata.Annotations[annotationDefinedBy] != definedByCRD {
		e := newError(http.StatusConflict, object.ReasonAlreadyExists,
			"customresourcedefinitions.apiextensions.k8s.io %q cannot be served: the ResourceDefinition %q defines that kind already; delete it first",
			crd.Metadata.Name, crd.Metadata.Name)
		e.details = &object.StatusDetails{Name: crd.Metadata.Name, Group: ref.group, Kind: ref.plural}
		return e
	}
	return nil
}

// syncCRD writes the ResourceDefinition a CRD stands for and serves it.
func (s *Service) syncCRD(ctx context.Context, crd *object.Object) error {
	def, causes := schemas.DefinitionFromCRD(crd)
	if len(causes) > 0 {
		return errors.New(causes[0].Field + ": " + causes[0].Message)
	}
	st, err := s.storeFor(ctx, s.reg.MustLookup("homeostat.io", "resourcedefinitions"))
	if err != nil {
		return err
	}
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := st.Get(ctx, crd.Metadata.Name)
		if err != nil && !errors.Is(err, bus.ErrNotFound) {
			return err
		}
		if cur != nil && cur.Metadata.Annotations[annotationDefinedBy] != definedByCRD {
			return nil // a ResourceDefinition of its own holds the name
		}
		n := &object.Object{APIVersion: "homeostat.io/v1", Kind: "ResourceDefinition", Metadata: object.Meta{Name: crd.Metadata.Name,
			Labels: crd.Metadata.Labels, Annotations: map[string]string{annotationDefinedBy: definedByCRD}}}
		if err := n.SetSpec(def); err != nil {
			return err
		}
		if e := establish(n); e != nil {
			return e
		}
		var written *object.Object
		if cur == nil {
			written, err = st.Create(ctx, n)
		} else {
			if object.SameJSON(n.Spec, cur.Spec) {
				s.register(ctx, cur)
				return nil
			}
			n.Metadata.ResourceVersion, n.Metadata.UID, n.Metadata.CreationTimestamp = cur.Metadata.ResourceVersion, cur.Metadata.UID, cur.Metadata.CreationTimestamp
			written, err = st.Update(ctx, n, bus.UpdateOptions{Current: cur})
		}
		if errors.Is(err, bus.ErrConflict) || errors.Is(err, bus.ErrAlreadyExists) {
			continue
		}
		if err != nil {
			return err
		}
		s.register(ctx, written)
		return nil
	}
	return bus.ErrConflict
}

// dropCRD removes the ResourceDefinition a deleted CRD stood for, and with
// it the kind and its objects.
func (s *Service) dropCRD(ctx context.Context, name string) {
	st, err := s.storeFor(ctx, s.reg.MustLookup("homeostat.io", "resourcedefinitions"))
	if err != nil {
		s.log.Warn("removing a deleted CRD's definition", "name", name, "err", err)
		return
	}
	rd, err := st.Get(ctx, name)
	if err != nil || rd.Metadata.Annotations[annotationDefinedBy] != definedByCRD {
		return
	}
	if _, _, err := st.Delete(ctx, name, bus.DeleteOptions{UID: rd.Metadata.UID}); err != nil && !errors.Is(err, bus.ErrNotFound) {
		s.log.Warn("removing a deleted CRD's definition", "name", name, "err", err)
		return
	}
	s.dropKind(ctx, rd)
}

// watchCRDs keeps every CRD's ResourceDefinition in step, on every
// replica: a CRD stored whose definition was not written, or one deleted
// while no replica ran, is made up for here.
func (s *Service) watchCRDs(ctx context.Context) error {
	st, err := s.storeFor(ctx, s.reg.MustLookup("apiextensions.k8s.io", "customresourcedefinitions"))
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		ch, err := st.Watch(ctx, bus.WatchOptions{})
		if err != nil {
			s.log.Warn("watching CustomResourceDefinitions", "err", err)
			if !clock.Sleep(ctx, time.Second) {
				break
			}
			continue
		}
		for ev := range ch {
			switch {
			case (ev.Type == bus.Added || ev.Type == bus.Modified) && !ev.Object.Metadata.Deleting():
				if err := s.syncCRD(ctx, ev.Object); err != nil && ctx.Err() == nil {
					s.log.Warn("serving a CustomResourceDefinition", "name", ev.Object.Metadata.Name, "err", err)
				}
			case ev.Type == bus.Deleted && ev.Object != nil:
				s.dropCRD(ctx, ev.Object.Metadata.Name)
			}
		}
	}
	return nil
}
