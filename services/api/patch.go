package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

func (s *Service) patch(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	dry, e := dryRun(r)
	if e != nil {
		return e
	}
	mt, data, conditional, e := s.readPatch(r, openapi.PatchTypes(ref.res))
	if e != nil {
		return e
	}
	// A patch that names no resourceVersion is re-applied to the latest
	// version on conflict until it lands, as in Kubernetes.
	for attempt := 0; ; attempt++ {
		cur, err := ref.store.Get(r.Context(), ref.key())
		creating := errors.Is(err, bus.ErrNotFound) && mt == openapi.ApplyPatch
		switch {
		case creating:
			// An apply of what is not there yet creates it.
			cur = &object.Object{APIVersion: ref.res.APIVersion(), Kind: ref.res.Kind, Metadata: object.Meta{Name: ref.name, Namespace: ref.namespace}}
		case err != nil:
			return storeError(ref, ref.name, err)
		}
		in, e := s.patchedObject(w, r, ref, mt, cur, data)
		if e != nil {
			return e
		}
		opts := writeOpts{dry: dry, applied: mt == openapi.ApplyPatch}
		if creating {
			e := s.insert(w, r, ref, in, opts)
			if e != nil && e.reason == object.ReasonAlreadyExists && r.Context().Err() == nil {
				continue // created meanwhile: apply over it
			}
			return e
		}
		out, e := s.replace(r, ref, cur, in, opts)
		if retryConflict(r, e, !conditional, attempt) {
			continue
		}
		if e != nil {
			return e
		}
		writeObject(w, r, http.StatusOK, out)
		return nil
	}
}

// patchedObject applies a patch to cur and reads the result as an object
// of the request's kind, its fields checked.
func (s *Service) patchedObject(w http.ResponseWriter, r *http.Request, ref *resourceRef, mt string, cur *object.Object, data []byte) (*object.Object, *apiError) {
	var doc map[string]any
	var e *apiError
	if mt == openapi.ApplyPatch {
		doc, e = s.serverSideApply(r, ref, cur, data)
	} else {
		doc, e = s.applyPatch(ref, mt, cur, data)
	}
	if e != nil {
		return nil, e
	}
	var dups []string
	if mt != openapi.JSONPatch {
		dups = schemas.DuplicateFields(data)
	}
	if e := s.checkFields(w, r, ref, doc, dups); e != nil {
		return nil, e
	}
	if e := normalize(ref, doc); e != nil {
		return nil, e
	}
	return toObject(doc)
}

// readPatch reads a patch of one of the given media types and reports
// whether it names a resourceVersion (a precondition).
func (s *Service) readPatch(r *http.Request, types []string) (string, []byte, bool, *apiError) {
	allowed := map[string]bool{}
	for _, t := range types {
		allowed[t] = true
	}
	data, mt, e := s.readBodyAs(r, allowed, strings.Join(types, ", "))
	if e != nil {
		return "", nil, false, e
	}
	if mt == openapi.ApplyPatch {
		if data, e = asJSON(data, "application/yaml"); e != nil {
			return "", nil, false, e
		}
	}
	conditional, e := patchNamesVersion(mt, data)
	return mt, data, conditional, e
}

// patchNamesVersion parses the patch once to refuse a malformed one early,
// and reports whether it names a resourceVersion (a precondition).
func patchNamesVersion(mt string, data []byte) (bool, *apiError) {
	if mt == openapi.JSONPatch {
		ops, err := jsonpatch.DecodePatch(data)
		if err != nil {
			return false, badRequest("the JSON patch is not valid: %v", err)
		}
		return slices.ContainsFunc(ops, func(op jsonpatch.Operation) bool {
			p, _ := op.Path()
			return p == "/metadata/resourceVersion"
		}), nil
	}
	var probe struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return false, badRequest("the patch is not a valid JSON object: %v", err)
	}
	return probe.Metadata.ResourceVersion != "", nil
}

// applyPatch applies a patch of the given media type to the current object.
func (s *Service) applyPatch(ref *resourceRef, mt string, cur *object.Object, patch []byte) (map[string]any, *apiError) {
	b, err := object.Encode(cur)
	if err != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "encoding: %v", err)
	}
	var meta strategicpatch.LookupPatchMeta
	if mt == openapi.StrategicMergePatch {
		d, err := s.openapi.Get()
		if err != nil {
			return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
		}
		sch, all, ok := d.Schema(ref.res)
		if !ok {
			return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "no schema for %s", ref.res.GroupResource())
		}
		meta = strategicpatch.PatchMetaFromOpenAPIV3{Schema: sch, SchemaList: all}
	}
	out, e := patchDocument(mt, b, patch, meta)
	if e != nil {
		return nil, e
	}
	return decodeObject(out)
}

// patchDocument applies a patch to a JSON document; meta gives strategic
// merge patch its merge keys.
func patchDocument(mt string, doc, patch []byte, meta strategicpatch.LookupPatchMeta) ([]byte, *apiError) {
	var out []byte
	var err error
	switch mt {
	case openapi.MergePatch:
		out, err = jsonpatch.MergePatch(doc, patch)
	case openapi.JSONPatch:
		ops, _ := jsonpatch.DecodePatch(patch) // parsed before
		out, err = ops.Apply(doc)
	case openapi.StrategicMergePatch:
		out, err = strategicpatch.StrategicMergePatchUsingLookupPatchMeta(doc, patch, meta)
	}
	if err != nil {
		return nil, patchError(err)
	}
	return out, nil
}

// patchError answers a patch that cannot be applied as Kubernetes does:
// 409 for a failed precondition or test operation, 422 otherwise.
func patchError(err error) *apiError {
	switch {
	case mergepatch.IsPreconditionFailed(err):
		return newError(http.StatusConflict, object.ReasonConflict, "the patch cannot be applied: %v", err)
	case errors.Is(err, jsonpatch.ErrTestFailed):
		return newError(http.StatusConflict, object.ReasonConflict, "the JSON patch's test failed: %v", err)
	}
	return newError(http.StatusUnprocessableEntity, object.ReasonInvalid, "the patch cannot be applied: %v", err)
}
