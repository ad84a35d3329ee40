package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

const deployJSON = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"%s","labels":{"tier":"%s"}},
 "spec":{"replicas":2,"selector":{"matchLabels":{"app":"%[1]s"}},
  "template":{"metadata":{"labels":{"app":"%[1]s"}},"spec":{"containers":[{"name":"c","command":["sleep","1000"]}]}}}}`

func deploy(name, tier string) string { return fmt.Sprintf(deployJSON, name, tier) }

func TestCRUD(t *testing.T) {
	base := startAPI(t, conn(t))
	coll := base + "/apis/apps/v1/namespaces/default/deployments"

	r := call(t, "POST", coll, "application/json", deploy("web", "front"))
	mustCode(t, r, http.StatusCreated, "")
	if r.obj.Metadata.UID == "" || r.obj.Metadata.ResourceVersion == "" || r.obj.Metadata.Generation != 1 {
		t.Fatalf("created object lacks metadata: %+v", r.obj.Metadata)
	}
	var spec map[string]any
	_ = json.Unmarshal(r.obj.Spec, &spec)
	if spec["revisionHistoryLimit"] != float64(10) || spec["progressDeadlineSeconds"] != float64(600) {
		t.Fatalf("defaults not applied: %s", r.obj.Spec)
	}
	mustCode(t, call(t, "POST", coll, "application/json", deploy("web", "front")), http.StatusConflict, object.ReasonAlreadyExists)

	// YAML bodies are accepted.
	yamlBody := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, labels: {tier: back}}\nspec:\n  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n    spec: {containers: [{name: c, command: [x]}]}\n"
	mustCode(t, call(t, "POST", coll, "application/yaml", yamlBody), http.StatusCreated, "")

	got := call(t, "GET", coll+"/web", "", "")
	mustCode(t, got, http.StatusOK, "")

	// Update with the revision read; the same body again is a conflict.
	cur := got.obj
	_ = json.Unmarshal([]byte(strings.Replace(string(got.body), `"replicas":2`, `"replicas":3`, 1)), &cur)
	body, _ := json.Marshal(cur)
	up := call(t, "PUT", coll+"/web", "application/json", string(body))
	mustCode(t, up, http.StatusOK, "")
	if up.obj.Metadata.Generation != 2 {
		t.Fatalf("generation after spec change: %d", up.obj.Metadata.Generation)
	}
	mustCode(t, call(t, "PUT", coll+"/web", "application/json", string(body)), http.StatusConflict, object.ReasonConflict)

	// Merge patch, with and without a resourceVersion precondition.
	p := call(t, "PATCH", coll+"/web", "application/merge-patch+json", `{"metadata":{"labels":{"extra":"yes"}}}`)
	mustCode(t, p, http.StatusOK, "")
	if p.obj.Metadata.Labels["extra"] != "yes" || p.obj.Metadata.Generation != 2 {
		t.Fatalf("patch: labels %v generation %d", p.obj.Metadata.Labels, p.obj.Metadata.Generation)
	}
	stale := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{"x":"y"}}}`, up.obj.Metadata.ResourceVersion)
	mustCode(t, call(t, "PATCH", coll+"/web", "application/merge-patch+json", stale), http.StatusConflict, object.ReasonConflict)
	mustCode(t, call(t, "PATCH", coll+"/web", "text/plain", `{}`), http.StatusUnsupportedMediaType, object.ReasonUnsupportedMediaType)

	// The status subresource changes status only; the main resource ignores status.
	st := call(t, "PATCH", coll+"/web/status", "application/merge-patch+json", `{"status":{"replicas":3},"spec":{"replicas":9}}`)
	mustCode(t, st, http.StatusOK, "")
	if !strings.Contains(string(st.obj.Status), `"replicas":3`) || strings.Contains(string(st.obj.Spec), `"replicas":9`) {
		t.Fatalf("status patch: spec %s status %s", st.obj.Spec, st.obj.Status)
	}
	main := call(t, "PATCH", coll+"/web", "application/merge-patch+json", `{"status":{"replicas":7}}`)
	mustCode(t, main, http.StatusOK, "")
	if !strings.Contains(string(main.obj.Status), `"replicas":3`) {
		t.Fatalf("main resource changed status: %s", main.obj.Status)
	}

	// Lists: label selector, limit and continue.
	var l object.List
	r = call(t, "GET", coll+"?labelSelector=tier%3Dfront", "", "")
	mustCode(t, r, http.StatusOK, "")
	_ = json.Unmarshal(r.body, &l)
	if len(l.Items) != 1 || l.Items[0].Metadata.Name != "web" || l.Kind != "DeploymentList" || l.Metadata.ResourceVersion == "" {
		t.Fatalf("selector list: %s", r.body)
	}
	r = call(t, "GET", coll+"?limit=1", "", "")
	_ = json.Unmarshal(r.body, &l)
	if len(l.Items) != 1 || l.Items[0].Metadata.Name != "api" || l.Metadata.Continue == "" {
		t.Fatalf("first page: %s", r.body)
	}
	r = call(t, "GET", coll+"?limit=1&continue="+l.Metadata.Continue, "", "")
	l = object.List{}
	_ = json.Unmarshal(r.body, &l)
	if len(l.Items) != 1 || l.Items[0].Metadata.Name != "web" || l.Metadata.Continue != "" {
		t.Fatalf("second page: %s", r.body)
	}
	mustCode(t, call(t, "GET", coll+"?labelSelector=a+in+b", "", ""), http.StatusBadRequest, object.ReasonBadRequest)
	r = call(t, "GET", base+"/apis/apps/v1/deployments", "", "")
	_ = json.Unmarshal(r.body, &l)
	if len(l.Items) != 2 {
		t.Fatalf("all-namespace list: %d items", len(l.Items))
	}

	// Delete, then 404.
	mustCode(t, call(t, "DELETE", coll+"/web", "", ""), http.StatusOK, "")
	mustCode(t, call(t, "GET", coll+"/web", "", ""), http.StatusNotFound, object.ReasonNotFound)
	mustCode(t, call(t, "DELETE", coll+"/web", "", ""), http.StatusNotFound, object.ReasonNotFound)
}

func TestFinalizersHoldDeletion(t *testing.T) {
	base := startAPI(t, conn(t))
	u := base + "/api/v1/namespaces/default/pods"
	mustCode(t, call(t, "POST", u, "", `{"metadata":{"name":"p","finalizers":["example.com/hold"]},"spec":{"containers":[{"name":"c","command":["x"]}]}}`), http.StatusCreated, "")
	d := call(t, "DELETE", u+"/p", "", "")
	mustCode(t, d, http.StatusOK, "")
	if d.obj.Metadata.DeletionTimestamp == nil {
		t.Fatal("delete with a finalizer did not set deletionTimestamp")
	}
	mustCode(t, call(t, "GET", u+"/p", "", ""), http.StatusOK, "")
	mustCode(t, call(t, "PATCH", u+"/p", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`), http.StatusOK, "")
	mustCode(t, call(t, "GET", u+"/p", "", ""), http.StatusNotFound, object.ReasonNotFound)
}

func TestErrorCodes(t *testing.T) {
	base := startAPI(t, conn(t), func(c *api.Config) { c.MaxBodyBytes = 4096 })
	pods := base + "/api/v1/namespaces/default/pods"
	pod := `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`

	mustCode(t, call(t, "POST", pods, "", `{"metadata":`), http.StatusBadRequest, object.ReasonBadRequest)
	mustCode(t, call(t, "POST", pods, "", `[1,2]`), http.StatusBadRequest, object.ReasonBadRequest)
	mustCode(t, call(t, "POST", pods, "", `{"kind":"Node","metadata":{"name":"x"}}`), http.StatusBadRequest, object.ReasonBadRequest)
	mustCode(t, call(t, "POST", pods, "", `{"metadata":{"name":"p","namespace":"other"},"spec":{}}`), http.StatusBadRequest, object.ReasonBadRequest)
	mustCode(t, call(t, "POST", pods, "text/plain", pod), http.StatusUnsupportedMediaType, object.ReasonUnsupportedMediaType)
	big := `{"metadata":{"name":"p","annotations":{"a":"` + strings.Repeat("x", 5000) + `"}}}`
	mustCode(t, call(t, "POST", pods, "", big), http.StatusRequestEntityTooLarge, object.ReasonRequestEntityTooLarge)
	mustCode(t, call(t, "GET", base+"/api/v1/namespaces/default/gizmos", "", ""), http.StatusNotFound, object.ReasonNotFound)
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/nope/pods", "", pod), http.StatusNotFound, object.ReasonNotFound)
	mustCode(t, call(t, "POST", base+"/api/v1/pods", "", pod), http.StatusMethodNotAllowed, object.ReasonMethodNotAllowed)
	mustCode(t, call(t, "PUT", pods, "", pod), http.StatusMethodNotAllowed, object.ReasonMethodNotAllowed)

	// 422 names every failing field and its rule.
	r := call(t, "POST", pods, "", `{"metadata":{"name":"Bad"},"spec":{"restartPolicy":"Sometimes","containers":[{"name":"c"}]}}`)
	mustCode(t, r, http.StatusUnprocessableEntity, object.ReasonInvalid)
	got := map[string]string{}
	for _, c := range r.status.Details.Causes {
		got[c.Field] = c.Type
	}
	want := map[string]string{"metadata.name": "pattern", "spec.restartPolicy": "enum", "spec.containers[0].command": "required"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("causes (-want +got):\n%s", diff)
	}
	mustCode(t, call(t, "GET", base+"/api/v1/namespaces/default/pods/p", "", ""), http.StatusNotFound, object.ReasonNotFound)

	// dryRun validates and answers but stores nothing.
	mustCode(t, call(t, "POST", pods+"?dryRun=All", "", pod), http.StatusCreated, "")
	mustCode(t, call(t, "GET", pods+"/p", "", ""), http.StatusNotFound, object.ReasonNotFound)
	mustCode(t, call(t, "POST", pods+"?dryRun=Some", "", pod), http.StatusBadRequest, object.ReasonBadRequest)
}

func TestTwoReplicasShareState(t *testing.T) {
	c := conn(t)
	a, b := startAPI(t, c), startAPI(t, c)
	mustCode(t, call(t, "POST", a+"/apis/apps/v1/namespaces/default/deployments", "", deploy("shared", "x")), http.StatusCreated, "")
	r := call(t, "GET", b+"/apis/apps/v1/namespaces/default/deployments/shared", "", "")
	mustCode(t, r, http.StatusOK, "")
	mustCode(t, call(t, "DELETE", b+"/apis/apps/v1/namespaces/default/deployments/shared", "", ""), http.StatusOK, "")
	mustCode(t, call(t, "GET", a+"/apis/apps/v1/namespaces/default/deployments/shared", "", ""), http.StatusNotFound, "")
}

func TestDiscovery(t *testing.T) {
	base := startAPI(t, conn(t))
	cl := newClient(t, base)
	for name, want := range map[string]string{"deploy": "deployments.apps", "po": "pods", "ResourceDefinition": "resourcedefinitions.homeostat.io", "jobs.batch": "jobs.batch"} {
		res, err := cl.ResourceFor(context.Background(), name)
		if err != nil || res.GroupResource() != want {
			t.Errorf("ResourceFor(%q) = %v, %v; want %s", name, res.GroupResource(), err, want)
		}
	}
}

// A create with generateName and no name gets a name the store makes,
// a new one each time, and is validated as that name.
func TestGenerateName(t *testing.T) {
	base := startAPI(t, conn(t))
	names := map[string]bool{}
	for range 2 {
		r := call(t, "POST", base+"/api/v1/namespaces/default/serviceaccounts", "application/json", `{"metadata":{"generateName":"bot-"}}`)
		mustCode(t, r, 201, "")
		if !strings.HasPrefix(r.obj.Metadata.Name, "bot-") || len(r.obj.Metadata.Name) != len("bot-")+5 {
			t.Fatalf("generated name %q", r.obj.Metadata.Name)
		}
		names[r.obj.Metadata.Name] = true
	}
	if len(names) != 2 {
		t.Fatalf("two creates made %v", names)
	}
	r := call(t, "POST", base+"/api/v1/namespaces/default/serviceaccounts", "application/json", `{"metadata":{"generateName":"Bad_"}}`)
	mustCode(t, r, 422, "Invalid")
	if !strings.Contains(r.status.Message, "metadata.generateName") {
		t.Fatalf("a bad generateName: %s", r.body)
	}
}

// Objects go only into a namespace that is there and open: one made a
// moment ago takes them at once (before the API's cache of namespaces has
// it), a missing one answers 404, and one being deleted 403.
func TestNamespaceLifecycle(t *testing.T) {
	base := startAPI(t, conn(t))
	pod := func(name string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`
	}
	// The first create fills the API's cache of namespaces.
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/default/pods", "", pod("p0")), http.StatusCreated, "")
	for i := range 3 {
		ns := fmt.Sprintf("team%d", i)
		mustCode(t, call(t, "POST", base+"/api/v1/namespaces", "", `{"metadata":{"name":"`+ns+`"}}`), http.StatusCreated, "")
		mustCode(t, call(t, "POST", base+"/api/v1/namespaces/"+ns+"/pods", "", pod("p")), http.StatusCreated, "")
	}
	r := call(t, "POST", base+"/api/v1/namespaces/nope/pods", "", pod("p"))
	mustCode(t, r, http.StatusNotFound, object.ReasonNotFound)
	if !strings.Contains(r.status.Message, `namespaces "nope" not found`) {
		t.Fatalf("404 says %q", r.status.Message)
	}
	// No namespace controller runs here: the namespace stays terminating.
	mustCode(t, call(t, "DELETE", base+"/api/v1/namespaces/team0", "", ""), http.StatusOK, "")
	poll.Until(t, "creates in the terminating namespace refused", 10*time.Second, func() bool {
		r := call(t, "POST", base+"/api/v1/namespaces/team0/pods", "", pod(fmt.Sprintf("late-%d", time.Now().UnixNano())))
		return r.code == http.StatusForbidden && strings.Contains(r.status.Message, "being terminated")
	})
}
