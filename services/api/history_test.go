package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

// TestHistorySubresource: an object's reconcile history is read oldest
// first, its latest entries per the configured bound, filtered by
// controller, time and count; a deleted object's history is still read;
// one that never existed is a 404; a bad filter is a 400 naming it. The
// API also brings Events to the retention it is configured with.
func TestHistorySubresource(t *testing.T) {
	c := conn(t)
	base := startAPI(t, c, func(cfg *api.Config) {
		cfg.History = bus.HistoryOptions{PerObject: 4}
		cfg.EventTTL = 2 * time.Hour
	})
	ctx := context.Background()
	if ttl, err := c.Retention(ctx, "events"); err != nil || ttl != 2*time.Hour {
		t.Fatalf("events kept %s (%v), want 2h", ttl, err)
	}
	deploys := base + "/apis/apps/v1/namespaces/default/deployments"
	mustCode(t, call(t, "POST", deploys, "application/json", fmt.Sprintf(deployJSON, "web", "front")), http.StatusCreated, "")

	h, err := c.History(ctx, bus.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-time.Hour)
	for i, ctrl := range []string{"deployment", "deployment", "other", "deployment", "other"} {
		e := reconcile.HistoryEntry{Time: start.Add(time.Duration(i) * 10 * time.Minute), Controller: ctrl, Key: "default.web",
			Attempt: 1, Outcome: reconcile.OutcomeUnchanged}
		b, _ := json.Marshal(e)
		if err := h.Append("deployments.apps", "default.web", b); err != nil {
			t.Fatal(err)
		}
	}
	read := func(query string) []reconcile.HistoryEntry {
		t.Helper()
		r := call(t, "GET", deploys+"/web/history"+query, "", "")
		mustCode(t, r, http.StatusOK, "")
		var got api.ReconcileHistory
		if err := json.Unmarshal(r.body, &got); err != nil || got.Kind != "ReconcileHistory" {
			t.Fatalf("history body: %s", r.body)
		}
		return got.Items
	}
	times := func(es []reconcile.HistoryEntry) string {
		var out []string
		for _, e := range es {
			out = append(out, fmt.Sprintf("%s@%d", e.Controller, int(e.Time.Sub(start)/time.Minute)))
		}
		return fmt.Sprint(out)
	}
	poll.Until(t, "the latest four entries", 10*time.Second, func() bool {
		return times(read("")) == "[deployment@10 other@20 deployment@30 other@40]"
	})
	if got := times(read("?controller=deployment")); got != "[deployment@10 deployment@30]" {
		t.Fatalf("?controller=deployment: %s", got)
	}
	if got := times(read("?limit=1")); got != "[other@40]" {
		t.Fatalf("?limit=1: %s", got)
	}
	if got := read("?since=" + time.Now().Add(time.Minute).UTC().Format(time.RFC3339)); len(got) != 0 {
		t.Fatalf("entries since a minute from now: %v", got)
	}
	r := call(t, "GET", deploys+"/web/history?since=yesterday", "", "")
	mustCode(t, r, http.StatusBadRequest, "BadRequest")
	mustCode(t, call(t, "GET", deploys+"/never/history", "", ""), http.StatusNotFound, "NotFound")
	mustCode(t, call(t, "POST", deploys+"/web/history", "application/json", "{}"), http.StatusMethodNotAllowed, "MethodNotAllowed")

	mustCode(t, call(t, "DELETE", deploys+"/web", "", ""), http.StatusOK, "")
	poll.Until(t, "the deleted Deployment gone", 10*time.Second, func() bool {
		return call(t, "GET", deploys+"/web", "", "").code == http.StatusNotFound
	})
	if got := read(""); len(got) != 4 {
		t.Fatalf("a deleted object's history: %v", got)
	}
}
