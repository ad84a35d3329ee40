package api

import (
	"encoding/json"
	"net/http"

	"github.com/homeostat/homeostat/object"
)

// ReconcileState is the body of the reconcile subresource: how the loops
// are doing with one object. No other control plane shows this.
type ReconcileState struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// TraceID is the trace of the object's latest write; for a user's
	// apply, the reconciles it caused are in the same trace.
	TraceID string `json:"traceID,omitempty"`
	// Retries holds, per controller that failed on the object and has not
	// succeeded since, the attempts, last error, next retry time and the
	// trace of the last attempt.
	Retries map[string]json.RawMessage `json:"retries"`
}

func (s *Service) reconcileState(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	if _, err := ref.store.Get(r.Context(), ref.key()); err != nil {
		return storeError(ref, ref.name, err)
	}
	st := ReconcileState{APIVersion: "homeostat.io/v1", Kind: "ReconcileState", Retries: map[string]json.RawMessage{}}
	if sc, err := ref.store.LastWriteTrace(r.Context(), ref.key()); err == nil && sc.HasTraceID() {
		st.TraceID = sc.TraceID().String()
	}
	recs, err := s.retries.ForObject(r.Context(), ref.res.GroupResource(), ref.key())
	if err != nil {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "reading retry state: %v", err)
	}
	for c, raw := range recs {
		st.Retries[c] = raw
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
