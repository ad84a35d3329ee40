package api

import (
	"encoding/json"
	"net/http"
	"regexp"

	"github.com/homeostat/homeostat/object"
)

var traceIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// trace serves the spans Homeostat's processes recorded for one trace
// (kept for an hour): GET /apis/homeostat.io/v1/traces/{id}.
func (s *Service) trace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !traceIDPattern.MatchString(id) {
		writeStatus(w, s.log, badRequest("trace id %q is not 32 lowercase hex digits", id))
		return
	}
	sink, err := s.bus.SpanSink(r.Context())
	if err != nil {
		writeStatus(w, s.log, newError(http.StatusServiceUnavailable, object.ReasonServiceUnavailable, "span store: %v", err))
		return
	}
	spans, err := sink.Spans(r.Context(), id)
	if err != nil {
		writeStatus(w, s.log, newError(http.StatusServiceUnavailable, object.ReasonServiceUnavailable, "reading trace %s: %v", id, err))
		return
	}
	if len(spans) == 0 {
		writeStatus(w, s.log, newError(http.StatusNotFound, object.ReasonNotFound,
			"no spans recorded for trace %s (spans are kept an hour, and only by processes started with span recording on)", id))
		return
	}
	raw := make([]json.RawMessage, len(spans))
	for i, b := range spans {
		raw[i] = b
	}
	writeJSON(w, http.StatusOK, map[string]any{"apiVersion": "homeostat.io/v1", "kind": "Trace", "traceID": id, "spans": raw})
}
