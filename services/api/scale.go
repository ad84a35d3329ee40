package api

import (
	"encoding/json"
	"net/http"

	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

// scalable says whether a kind has the scale subresource: the workload
// kinds whose replicas a client sets (kubectl scale, an autoscaler).
func scalable(res *schemas.Resource) bool {
	return !res.Custom && res.Group == "apps" && (res.Kind == "Deployment" || res.Kind == "ReplicaSet")
}

// scale is an autoscaling/v1 Scale: the replicas of a workload, desired
// and observed, and the selector of its pods.
type scale struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   object.Meta `json:"metadata"`
	Spec       struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
	Status struct {
		Replicas int32  `json:"replicas"`
		Selector string `json:"selector,omitempty"`
	} `json:"status"`
}

// replicasOf is the part of a workload's spec and status a Scale shows.
type replicasOf struct {
	Spec struct {
		Replicas *int32                `json:"replicas"`
		Selector *object.LabelSelector `json:"selector"`
	} `json:"spec"`
	Status struct {
		Replicas int32 `json:"replicas"`
	} `json:"status"`
}

func scaleOf(o *object.Object) (*scale, *apiError) {
	b, err := object.Encode(o)
	if err != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "encoding: %v", err)
	}
	var w replicasOf
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "decoding: %v", err)
	}
	sc := &scale{APIVersion: "autoscaling/v1", Kind: "Scale", Metadata: object.Meta{
		Name: o.Metadata.Name, Namespace: o.Metadata.Namespace, UID: o.Metadata.UID,
		ResourceVersion: o.Metadata.ResourceVersion, CreationTimestamp: o.Metadata.CreationTimestamp,
	}}
	sc.Spec.Replicas = 1
	if w.Spec.Replicas != nil {
		sc.Spec.Replicas = *w.Spec.Replicas
	}
	sc.Status.Replicas = w.Status.Replicas
	if w.Spec.Selector != nil {
		if sel, err := w.Spec.Selector.Selector(); err == nil {
			sc.Status.Selector = sel.String()
		}
	}
	return sc, nil
}

// scaleSubresource reads and sets a workload's replicas through a Scale.
func (s *Service) scaleSubresource(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	var change func(cur *scale) (*scale, bool, *apiError)
	switch r.Method {
	case http.MethodGet:
		cur, err := ref.store.Get(r.Context(), ref.key())
		if err != nil {
			return storeError(ref, ref.name, err)
		}
		sc, e := scaleOf(cur)
		if e != nil {
			return e
		}
		writeObject(w, r, http.StatusOK, sc)
		return nil
	case http.MethodPut:
		data, _, e := s.readKubeBody(r, true)
		if e != nil {
			return e
		}
		var in scale
		if err := json.Unmarshal(data, &in); err != nil {
			return badRequest("the body is not a Scale: %v", err)
		}
		change = func(*scale) (*scale, bool, *apiError) { return &in, in.Metadata.ResourceVersion != "", nil }
	case http.MethodPatch:
		mt, patch, conditional, e := s.readPatch(r, []string{openapi.JSONPatch, openapi.MergePatch, openapi.StrategicMergePatch})
		if e != nil {
			return e
		}
		change = func(cur *scale) (*scale, bool, *apiError) {
			b, _ := json.Marshal(cur)
			out, e := patchDocument(mt, b, patch, mustStructMeta(scale{}))
			if e != nil {
				return nil, false, e
			}
			var in scale
			if err := json.Unmarshal(out, &in); err != nil {
				return nil, false, newError(http.StatusUnprocessableEntity, object.ReasonInvalid, "the patched Scale: %v", err)
			}
			return &in, conditional, nil
		}
	default:
		return methodNotAllowed(r, "GET, PUT, PATCH")
	}
	return s.setScale(w, r, ref, change)
}

// setScale writes the replicas a change of the current Scale asks for,
// again on a conflict unless the change named a resourceVersion.
func (s *Service) setScale(w http.ResponseWriter, r *http.Request, ref *resourceRef, change func(*scale) (*scale, bool, *apiError)) *apiError {
	dry, e := dryRun(r)
	if e != nil {
		return e
	}
	for attempt := 0; ; attempt++ {
		cur, err := ref.store.Get(r.Context(), ref.key())
		if err != nil {
			return storeError(ref, ref.name, err)
		}
		sc, e := scaleOf(cur)
		if e != nil {
			return e
		}
		in, conditional, e := change(sc)
		if e != nil {
			return e
		}
		if in.Spec.Replicas < 0 {
			return invalidField(ref, ref.name, "spec.replicas", "minimum", "spec.replicas must be 0 or more")
		}
		n := cur.Clone()
		if conditional {
			n.Metadata.ResourceVersion = in.Metadata.ResourceVersion
		}
		var spec map[string]any
		if err := json.Unmarshal(n.Spec, &spec); err != nil {
			return newError(http.StatusInternalServerError, object.ReasonInternalError, "decoding the spec: %v", err)
		}
		spec["replicas"] = in.Spec.Replicas
		n.Spec, _ = json.Marshal(spec)
		out, e := s.replace(r, ref, cur, n, writeOpts{dry: dry})
		if retryConflict(r, e, !conditional, attempt) {
			continue
		}
		if e != nil {
			return e
		}
		sc, e = scaleOf(out)
		if e != nil {
			return e
		}
		writeObject(w, r, http.StatusOK, sc)
		return nil
	}
}

// mustStructMeta is the patch metadata of a Go type of the API's own.
func mustStructMeta(v any) strategicpatch.LookupPatchMeta {
	m, err := strategicpatch.NewPatchMetaFromStruct(v)
	if err != nil {
		panic("api: patch metadata: " + err.Error())
	}
	return m
}
