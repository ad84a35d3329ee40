package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// readObject reads the body of a create or update as an object of the
// path's kind, namespace and name, and whether it is a dry run.
func (s *Service) readObject(w http.ResponseWriter, r *http.Request, ref *resourceRef) (*object.Object, bool, *apiError) {
	dry, e := dryRun(r)
	if e != nil {
		return nil, false, e
	}
	data, text, e := s.readKubeBody(r, !ref.res.Custom)
	if e != nil {
		return nil, false, e
	}
	var dups []string
	if text {
		dups = schemas.DuplicateFields(data)
	}
	doc, e := decodeObject(data)
	if e != nil {
		return nil, false, e
	}
	if e := s.checkFields(w, r, ref, doc, dups); e != nil {
		return nil, false, e
	}
	if e := normalize(ref, doc); e != nil {
		return nil, false, e
	}
	o, e := toObject(doc)
	return o, dry, e
}

// writeOpts say how a write is made: as a dry run, and whether its
// managed fields are made already (by an apply) or still to be tracked.
type writeOpts struct {
	dry, applied bool
}

func (s *Service) create(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	o, dry, e := s.readObject(w, r, ref)
	if e != nil {
		return e
	}
	return s.insert(w, r, ref, o, writeOpts{dry: dry})
}

// insert creates o, read from a create or made by an apply.
func (s *Service) insert(w http.ResponseWriter, r *http.Request, ref *resourceRef, o *object.Object, opts writeOpts) *apiError {
	dry := opts.dry
	if !opts.applied {
		o = s.trackUpdate(r, ref, nil, o)
	}
	if o.Metadata.Name == "" && o.Metadata.GenerateName == "" {
		return invalidField(ref, "", "metadata.name", "required", "metadata.name or metadata.generateName is required")
	}
	if o.Metadata.ResourceVersion != "" {
		return badRequest("metadata.resourceVersion must not be set on create")
	}
	// Status is written through the status subresource, by whoever observes
	// it; a new namespace starts Active.
	o.Status = nil
	if e := establishAny(ref, o); e != nil {
		return e
	}
	if !ref.res.Custom && ref.res.Kind == "Namespace" {
		o.Status = []byte(`{"phase":"Active"}`)
		if !o.Metadata.HasFinalizer(object.FinalizerNamespace) {
			o.Metadata.Finalizers = append(o.Metadata.Finalizers, object.FinalizerNamespace)
		}
	}
	o.Metadata.UID, o.Metadata.Generation = "", 0
	o.Metadata.DeletionTimestamp, o.Metadata.DeletionGracePeriodSeconds = nil, nil
	o, e := s.check(ref, o)
	if e != nil {
		return e
	}
	if e := s.admitRBAC(r.Context(), ref, o, nil); e != nil {
		return e
	}
	if e := s.crdNameFree(r.Context(), ref, o); e != nil {
		return e
	}
	if e := s.namespaceOpen(r.Context(), ref, o.Metadata.Namespace); e != nil {
		return e
	}
	if dry {
		noteCreated(r.Context(), o.Metadata.Name)
		writeObject(w, r, http.StatusCreated, o)
		return nil
	}
	created, err := ref.store.Create(r.Context(), o)
	if err != nil {
		return storeError(ref, o.Metadata.Name, err)
	}
	noteCreated(r.Context(), created.Metadata.Name)
	s.afterWrite(r, ref, created)
	writeObject(w, r, http.StatusCreated, created)
	return nil
}

func (s *Service) update(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	in, dry, e := s.readObject(w, r, ref)
	if e != nil {
		return e
	}
	// Without a resourceVersion an update applies to the latest version:
	// a concurrent write is retried, never answered with 409.
	unconditional := in.Metadata.ResourceVersion == ""
	for attempt := 0; ; attempt++ {
		cur, err := ref.store.Get(r.Context(), ref.key())
		if err != nil {
			return storeError(ref, ref.name, err)
		}
		out, e := s.replace(r, ref, cur, in.Clone(), writeOpts{dry: dry})
		if retryConflict(r, e, unconditional, attempt) {
			continue
		}
		if e != nil {
			return e
		}
		writeObject(w, r, http.StatusOK, out)
		return nil
	}
}

// retryConflict says whether a write that met a conflict is made again on
// the latest version, which an unconditional write (one that named no
// resourceVersion) is, as in Kubernetes; it pauses first when conflicts
// repeat.
func retryConflict(r *http.Request, e *apiError, unconditional bool, attempt int) bool {
	if e == nil || e.reason != object.ReasonConflict || !unconditional || r.Context().Err() != nil {
		return false
	}
	conflictPause(r.Context(), attempt)
	return true
}

// conflictPause spreads out retries after repeated conflicts on one key.
func conflictPause(ctx context.Context, attempt int) {
	if attempt >= 3 {
		clock.Sleep(ctx, time.Duration(min(attempt, 20))*time.Millisecond)
	}
}

// replace writes in over cur: the whole object but its status, or only the
// status on the status subresource. An empty resourceVersion means "the
// latest", as Kubernetes allows for an unconditional update.
func (s *Service) replace(r *http.Request, ref *resourceRef, cur, in *object.Object, opts writeOpts) (*object.Object, *apiError) {
	dry := opts.dry
	n := in
	if ref.sub == "status" {
		n = cur.Clone()
		n.Status = in.Status
		n.Metadata.ResourceVersion = in.Metadata.ResourceVersion
	} else {
		n.Status = cur.Status
		if e := establishAny(ref, n); e != nil {
			return nil, e
		}
	}
	if n.Metadata.ResourceVersion == "" {
		n.Metadata.ResourceVersion = cur.Metadata.ResourceVersion
	}
	if n.Metadata.UID != "" && n.Metadata.UID != cur.Metadata.UID {
		return nil, storeError(ref, ref.name, bus.ErrConflict)
	}
	if !opts.applied {
		n = s.trackUpdate(r, ref, cur, n)
	}
	n, e := s.check(ref, n)
	if e != nil {
		return nil, e
	}
	if e := immutableConfig(ref, n, cur); e != nil {
		return nil, e
	}
	if e := s.crdNameFree(r.Context(), ref, n); e != nil {
		return nil, e
	}
	if e := s.admitRBAC(r.Context(), ref, n, cur); e != nil {
		return nil, e
	}
	if dry {
		return n, nil
	}
	updated, err := ref.store.Update(r.Context(), n, bus.UpdateOptions{Current: cur})
	if err != nil {
		return nil, storeError(ref, ref.name, err)
	}
	s.afterWrite(r, ref, updated)
	return updated, nil
}

func (s *Service) delete(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	q := r.URL.Query()
	dry, e := dryRun(r)
	if e != nil {
		return e
	}
	var body struct {
		GracePeriodSeconds *int64 `json:"gracePeriodSeconds"`
		PropagationPolicy  string `json:"propagationPolicy"`
		DryRun             []string
		Preconditions      struct {
			UID             string `json:"uid"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"preconditions"`
	}
	if r.ContentLength != 0 && r.Body != nil {
		data, _, e := s.readKubeBody(r, true)
		if e == nil {
			if err := json.Unmarshal(data, &body); err != nil {
				return badRequest("the delete options are not valid JSON: %v", err)
			}
		} else if e.reason != object.ReasonBadRequest || r.ContentLength > 0 {
			return e
		}
	}
	if len(body.DryRun) == 1 && body.DryRun[0] == "All" {
		dry = true
	}
	opts := bus.DeleteOptions{UID: body.Preconditions.UID, GracePeriodSeconds: body.GracePeriodSeconds}
	if v := q.Get("gracePeriodSeconds"); v != "" {
		g, err := strconv.ParseInt(v, 10, 64)
		if err != nil || g < 0 {
			return badRequest("gracePeriodSeconds=%q must be a non-negative integer", v)
		}
		opts.GracePeriodSeconds = &g
	}
	if rv := body.Preconditions.ResourceVersion; rv != "" {
		rev, err := bus.Revision(rv)
		if err != nil {
			return badRequest("%v", err)
		}
		opts.Revision = rev
	}
	policy := body.PropagationPolicy
	if v := q.Get("propagationPolicy"); v != "" {
		policy = v
	}
	switch policy {
	case "", "Background", "Foreground", "Orphan":
	default:
		return badRequest("propagationPolicy %q is not one of Background, Foreground, Orphan", policy)
	}
	if dry {
		cur, err := ref.store.Get(r.Context(), ref.key())
		if err != nil {
			return storeError(ref, ref.name, err)
		}
		writeObject(w, r, http.StatusOK, cur)
		return nil
	}
	if e := s.prepareDelete(r, ref, policy, &opts); e != nil {
		return e
	}
	o, gone, err := ref.store.Delete(r.Context(), ref.key(), opts)
	if err != nil {
		return storeError(ref, ref.name, err)
	}
	if o == nil {
		// A corrupt value was removed as it was: there is no object to show.
		reconcile.CorruptCleared(ref.res.GroupResource(), ref.key())
		writeObject(w, r, http.StatusOK, object.Status{APIVersion: "v1", Kind: "Status", Status: "Success", Code: http.StatusOK,
			Details: &object.StatusDetails{Name: ref.name, Group: ref.group, Kind: ref.plural}})
		return nil
	}
	if gone {
		s.afterDelete(r, ref, o)
	}
	writeObject(w, r, http.StatusOK, o)
	return nil
}
