package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/object"
)

const appliedWeb = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {team: a}}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, command: [sleep, "1000"]}]
`

type managed struct {
	Manager, Operation string
	Subresource        string `json:",omitempty"`
}

func managers(t *testing.T, o object.Object) []managed {
	t.Helper()
	var m []managed
	if err := json.Unmarshal(o.Metadata.ManagedFields, &m); err != nil {
		t.Fatalf("managedFields %s: %v", o.Metadata.ManagedFields, err)
	}
	return m
}

// TestServerSideApply: an apply creates, records its manager's fields,
// conflicts with another manager's (409 naming field and manager) unless
// forced, and other writes are recorded as Updates of their own manager.
func TestServerSideApply(t *testing.T) {
	base := startAPI(t, conn(t))
	web := base + "/apis/apps/v1/namespaces/default/deployments/web"
	apply := func(manager, replicas, extra string) response {
		return call(t, "PATCH", web+"?fieldManager="+manager+extra, "application/apply-patch+yaml", strings.Replace(appliedWeb, "REPLICAS", replicas, 1))
	}
	r := apply("alice", "2", "")
	mustCode(t, r, http.StatusCreated, "")
	if m := managers(t, r.obj); len(m) != 1 || m[0] != (managed{Manager: "alice", Operation: "Apply"}) {
		t.Fatalf("managers after the first apply: %+v", m)
	}
	mustCode(t, apply("alice", "2", ""), http.StatusOK, "")

	// Bob's apply of a field alice owns, with another value, conflicts.
	c := apply("bob", "5", "")
	mustCode(t, c, http.StatusConflict, object.ReasonConflict)
	if c.status.Details == nil || len(c.status.Details.Causes) != 1 || c.status.Details.Causes[0].Field != ".spec.replicas" ||
		!strings.Contains(c.status.Details.Causes[0].Message, `"alice"`) {
		t.Fatalf("conflict: %s", c.body)
	}
	r = apply("bob", "5", "&force=true")
	mustCode(t, r, http.StatusOK, "")
	// A merge patch by another client is an Update of its own manager.
	p := call(t, "PATCH", web+"?fieldManager=carol", "application/merge-patch+json", `{"metadata":{"labels":{"carol":"x"}}}`)
	mustCode(t, p, http.StatusOK, "")
	got := map[string]string{}
	for _, m := range managers(t, p.obj) {
		got[m.Manager] = m.Operation
	}
	if got["alice"] != "Apply" || got["bob"] != "Apply" || got["carol"] != "Update" {
		t.Fatalf("managers: %v", got)
	}
	// Alice applies without replicas now that bob owns them: hers go, his stay.
	r = call(t, "PATCH", web+"?fieldManager=alice", "application/apply-patch+yaml",
		strings.Replace(strings.Replace(appliedWeb, "  replicas: REPLICAS\n", "", 1), "team: a", "team: a, tier: x", 1))
	mustCode(t, r, http.StatusOK, "")
	var spec struct{ Replicas int }
	_ = json.Unmarshal(r.obj.Spec, &spec)
	if spec.Replicas != 5 || r.obj.Metadata.Labels["tier"] != "x" || r.obj.Metadata.Labels["carol"] != "x" {
		t.Fatalf("after alice's second apply: replicas %d, labels %v", spec.Replicas, r.obj.Metadata.Labels)
	}
	// A status write is recorded under its manager, for the status
	// subresource; an apply of the object still owns none of it.
	st := call(t, "PATCH", web+"/status?fieldManager=observer", "application/merge-patch+json", `{"status":{"observedGeneration":7}}`)
	mustCode(t, st, http.StatusOK, "")
	found := false
	for _, m := range managers(t, st.obj) {
		found = found || m == (managed{"observer", "Update", "status"})
	}
	if !found || !strings.Contains(string(st.obj.Metadata.ManagedFields), `"f:observedGeneration"`) {
		t.Fatalf("a status write's manager: %s", st.obj.Metadata.ManagedFields)
	}
	// An apply that is not the path's object, or of no field manager.
	mustCode(t, call(t, "PATCH", base+"/apis/apps/v1/namespaces/default/deployments/other?fieldManager=a", "application/apply-patch+yaml",
		strings.Replace(appliedWeb, "REPLICAS", "1", 1)), http.StatusBadRequest, object.ReasonBadRequest)
	mustCode(t, call(t, "PATCH", web, "application/apply-patch+yaml", strings.Replace(appliedWeb, "REPLICAS", "1", 1)),
		http.StatusBadRequest, object.ReasonBadRequest)
}
