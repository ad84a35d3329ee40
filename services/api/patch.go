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

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
)

func (s *Service) patch(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	dry, e := dryRun(r)
	if e != nil {
		return e
	}
	types := openapi.PatchTypes(ref.res)
	allowed := map[string]bool{}
	for _, t := range types {
		allowed[t] = true
	}
	data, mt, e := s.readBodyAs(r, allowed, strings.Join(types, ", "))
	if e != nil {
		return e
	}
	conditional, e := patchNamesVersion(mt, data)
	if e != nil {
		return e
	}
	// A patch that names no resourceVersion is re-applied to the latest
	// version on conflict until it lands, as in Kubernetes.
	for attempt := 0; ; attempt++ {
		cur, err := ref.store.Get(r.Context(), ref.key())
		if err != nil {
			return storeError(ref, ref.name, err)
		}
		doc, e := s.applyPatch(ref, mt, cur, data)
		if e != nil {
			return e
		}
		if e := normalize(ref, doc); e != nil {
			return e
		}
		in, e := toObject(doc)
		if e != nil {
			return e
		}
		out, e := s.replace(r, ref, cur, in, dry)
		if e != nil && e.reason == object.ReasonConflict && !conditional && r.Context().Err() == nil {
			conflictPause(r.Context(), attempt)
			continue
		}
		if e != nil {
			return e
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
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
	var out []byte
	switch mt {
	case openapi.MergePatch:
		out, err = jsonpatch.MergePatch(b, patch)
	case openapi.JSONPatch:
		ops, _ := jsonpatch.DecodePatch(patch) // parsed before
		out, err = ops.Apply(b)
	case openapi.StrategicMergePatch:
		d, derr := s.openapi.Get()
		if derr != nil {
			return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", derr)
		}
		sch, all, ok := d.Schema(ref.res)
		if !ok {
			return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "no schema for %s", ref.res.GroupResource())
		}
		out, err = strategicpatch.StrategicMergePatchUsingLookupPatchMeta(b, patch,
			strategicpatch.PatchMetaFromOpenAPIV3{Schema: sch, SchemaList: all})
	}
	if err != nil {
		return nil, patchError(mt, err)
	}
	return decodeObject(out)
}

// patchError answers a patch that cannot be applied as Kubernetes does:
// 409 for a failed precondition or test operation, 422 otherwise.
func patchError(mt string, err error) *apiError {
	switch {
	case mergepatch.IsPreconditionFailed(err):
		return newError(http.StatusConflict, object.ReasonConflict, "the patch cannot be applied: %v", err)
	case errors.Is(err, jsonpatch.ErrTestFailed):
		return newError(http.StatusConflict, object.ReasonConflict, "the JSON patch's test failed: %v", err)
	}
	return newError(http.StatusUnprocessableEntity, object.ReasonInvalid, "the patch cannot be applied: %v", err)
}
