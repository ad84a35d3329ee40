package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// watchDefinitions keeps this replica's registry in step with the
// ResourceDefinitions in the store, so that every replica serves a custom
// kind as soon as it is defined and stops when it is deleted. The service
// is ready once the initial definitions are registered.
func (s *Service) watchDefinitions(ctx context.Context) error {
	defs := s.reg.MustLookup("homeostat.io", "resourcedefinitions")
	st, err := s.storeFor(ctx, defs)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		ch, err := st.Watch(ctx, bus.WatchOptions{})
		if err != nil {
			s.log.Warn("watching ResourceDefinitions", "err", err)
			if !clock.Sleep(ctx, time.Second) {
				break
			}
			continue
		}
		for ev := range ch {
			s.applyDefinition(ctx, ev)
		}
		s.ready.Store(false)
	}
	return nil
}

func (s *Service) applyDefinition(ctx context.Context, ev bus.Event) {
	switch ev.Type {
	case bus.Synced:
		s.ready.Store(true)
	case bus.Added, bus.Modified:
		if ev.Object.Metadata.Deleting() {
			s.unregister(ev.Object)
			return
		}
		s.register(ctx, ev.Object)
	case bus.Deleted:
		if ev.Object != nil {
			s.unregister(ev.Object)
		}
	case bus.Failed:
		s.log.Warn("ResourceDefinition watch", "err", ev.Err)
	}
}

func (s *Service) unregister(def *object.Object) {
	var spec schemas.DefinitionSpec
	if err := def.DecodeSpec(&spec); err == nil {
		s.reg.Unregister(spec.Group, spec.Plural)
	}
}

// afterWrite applies what a write means beyond the store: a written
// ResourceDefinition is served by this replica before the response goes out.
func (s *Service) afterWrite(r *http.Request, ref *resourceRef, o *object.Object) {
	switch {
	case isDefinition(ref):
		s.register(r.Context(), o)
	case isCRD(ref) && !o.Metadata.Deleting():
		if err := s.syncCRD(r.Context(), o); err != nil {
			s.log.Warn("serving a CustomResourceDefinition", "name", o.Metadata.Name, "err", err)
		}
	}
}

func isDefinition(ref *resourceRef) bool {
	return !ref.res.Custom && ref.res.Kind == "ResourceDefinition"
}

// establish sets a definition's status as a CustomResourceDefinition's
// reads once served: its names accepted and the kind established, which
// this replica makes true before it answers (afterWrite), and every other
// at once (resolve looks a kind up when it has not heard of it).
func establish(def *object.Object) *apiError {
	var spec schemas.DefinitionSpec
	if err := def.DecodeSpec(&spec); err != nil {
		return badRequest("spec: %v", err)
	}
	singular := spec.Singular
	if singular == "" {
		singular = strings.ToLower(spec.Kind)
	}
	now := time.Now().UTC().Truncate(time.Second)
	var conds []object.Condition
	object.SetCondition(&conds, object.Condition{Type: "NamesAccepted", Status: object.ConditionTrue, Reason: "NoConflicts",
		Message: "no conflicts found"}, now)
	object.SetCondition(&conds, object.Condition{Type: "Established", Status: object.ConditionTrue, Reason: "InitialNamesAccepted",
		Message: "the initial names have been accepted"}, now)
	st := map[string]any{"conditions": conds, "acceptedNames": map[string]any{
		"kind": spec.Kind, "plural": spec.Plural, "singular": singular, "shortNames": spec.ShortNames}}
	if err := def.SetStatus(st); err != nil {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
	}
	return nil
}

// register serves a defined kind.
// Its bucket is made at once, for the controllers (which may not create
// buckets) to follow the kind before its first object.
func (s *Service) register(ctx context.Context, def *object.Object) {
	res, err := s.reg.Register(def)
	if err != nil {
		s.log.Warn("ResourceDefinition not served", "name", def.Metadata.Name, "err", err)
		return
	}
	if _, err := s.storeFor(ctx, res); err != nil {
		s.log.Warn("no bucket for a defined kind yet", "name", def.Metadata.Name, "err", err)
	}
}

// afterDelete: a deleted ResourceDefinition stops being served, and its
// objects go with it (finalizers notwithstanding, as with a
// CustomResourceDefinition). The kind comes from the deleted definition
// itself, not from the registry: the definitions watch may have
// unregistered it already.
func (s *Service) afterDelete(r *http.Request, ref *resourceRef, o *object.Object) {
	switch {
	case isDefinition(ref):
		s.dropKind(r.Context(), o)
	case isCRD(ref):
		s.dropCRD(r.Context(), o.Metadata.Name)
	}
}

// dropKind stops serving a deleted definition's kind and deletes its objects.
func (s *Service) dropKind(ctx context.Context, def *object.Object) {
	var spec schemas.DefinitionSpec
	if err := def.DecodeSpec(&spec); err != nil {
		s.log.Warn("a deleted ResourceDefinition does not decode; its objects stay", "name", def.Metadata.Name, "err", err)
		return
	}
	s.reg.Unregister(spec.Group, spec.Plural)
	resource := spec.Plural + "." + spec.Group
	st, err := s.bus.Store(ctx, bus.StoreSpec{Resource: resource, Kind: spec.Kind, Namespaced: spec.Scope != "Cluster"})
	if err == nil {
		_, err = st.DeleteAll(ctx)
	}
	if err != nil {
		s.log.Warn("deleting the objects of a deleted kind", "kind", resource, "err", err)
	}
}

// prepareDelete applies the propagation policy: Orphan and Foreground are
// finalizers the garbage collector acts on before the object goes.
func (s *Service) prepareDelete(r *http.Request, ref *resourceRef, policy string, opts *bus.DeleteOptions) *apiError {
	if !ref.res.Custom && ref.res.Kind == "Pod" && opts.GracePeriodSeconds == nil {
		// A pod running on a node is stopped by its agent within the grace
		// period, which then removes it; an unbound pod goes at once.
		if cur, err := ref.store.Get(r.Context(), ref.key()); err == nil {
			var spec kinds.PodSpec
			if cur.DecodeSpec(&spec) == nil && spec.NodeName != "" {
				g := kinds.Int64(spec.TerminationGracePeriodSeconds, 30)
				opts.GracePeriodSeconds = &g
			}
		}
	}
	var f string
	switch policy {
	case "Orphan":
		f = object.FinalizerOrphan
	case "Foreground":
		f = object.FinalizerForeground
	default:
		return nil
	}
	if !ref.res.Custom && ref.res.Kind == "Namespace" {
		return nil
	}
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := ref.store.Get(r.Context(), ref.key())
		if err != nil {
			return storeError(ref, ref.name, err)
		}
		if cur.Metadata.HasFinalizer(f) || cur.Metadata.Deleting() {
			return nil
		}
		rev, _ := bus.Revision(cur.Metadata.ResourceVersion)
		if (opts.UID != "" && opts.UID != cur.Metadata.UID) || (opts.Revision != 0 && opts.Revision != rev) {
			return storeError(ref, ref.name, bus.ErrConflict)
		}
		n := cur.Clone()
		n.Metadata.Finalizers = append(n.Metadata.Finalizers, f)
		updated, err := ref.store.Update(r.Context(), n, bus.UpdateOptions{Current: cur})
		if errors.Is(err, bus.ErrConflict) && opts.Revision == 0 {
			continue
		}
		if err != nil {
			return storeError(ref, ref.name, err)
		}
		if opts.Revision != 0 {
			// The precondition held; the delete follows our own write.
			opts.Revision, _ = bus.Revision(updated.Metadata.ResourceVersion)
		}
		return nil
	}
	return storeError(ref, ref.name, bus.ErrConflict)
}
