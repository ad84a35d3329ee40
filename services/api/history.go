package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/reconcile"
)

// ReconcileHistory is the body of the history subresource: the reconciles
// of one object, oldest first.
type ReconcileHistory struct {
	APIVersion string                   `json:"apiVersion"`
	Kind       string                   `json:"kind"`
	Items      []reconcile.HistoryEntry `json:"items"`
}

// historyQuery is what a history request asks for.
type historyQuery struct {
	since      time.Time
	controller string
	// limit keeps the latest entries only (0: all).
	limit int
}

func parseHistoryQuery(r *http.Request, now time.Time) (historyQuery, *apiError) {
	q := r.URL.Query()
	hq := historyQuery{controller: q.Get("controller")}
	if s := q.Get("since"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			hq.since = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			hq.since = t
		} else {
			return hq, badRequest("since: %q is neither a duration (1h30m) nor an RFC 3339 time", s)
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return hq, badRequest("limit: %q is not a count of entries", s)
		}
		hq.limit = n
	}
	return hq, nil
}

// readHistory returns an object's history entries as hq asks.
func (s *Service) readHistory(r *http.Request, ref *resourceRef, hq historyQuery) ([]reconcile.HistoryEntry, error) {
	var items []reconcile.HistoryEntry
	err := s.history.Read(r.Context(), ref.res.GroupResource(), ref.key(), hq.since, func(data []byte) error {
		var e reconcile.HistoryEntry
		if json.Unmarshal(data, &e) != nil {
			return nil // not an entry this version reads; the others still are
		}
		if hq.controller == "" || e.Controller == hq.controller {
			items = append(items, e)
		}
		return nil
	})
	if hq.limit > 0 && len(items) > hq.limit {
		items = items[len(items)-hq.limit:]
	}
	return items, err
}

// reconcileHistory answers the history subresource. The history of an
// object that is gone is still answered: why it went is often the
// question.
func (s *Service) reconcileHistory(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	hq, e := parseHistoryQuery(r, time.Now())
	if e != nil {
		return e
	}
	items, err := s.readHistory(r, ref, hq)
	if err != nil {
		return storeError(ref, ref.name, err)
	}
	if len(items) == 0 {
		if _, err := ref.store.Get(r.Context(), ref.key()); errors.Is(err, bus.ErrNotFound) {
			return storeError(ref, ref.name, err)
		}
	}
	if items == nil {
		items = []reconcile.HistoryEntry{}
	}
	writeJSON(w, http.StatusOK, ReconcileHistory{APIVersion: "homeostat.io/v1", Kind: "ReconcileHistory", Items: items})
	return nil
}
