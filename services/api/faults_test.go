package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

type answer struct {
	code   int
	header http.Header
	body   []byte
}

// send is call for goroutines: it reports failures instead of ending the
// test. It runs after startAPI, which makes the admin client.
func send(method, url, contentType, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return answer{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{code: resp.StatusCode, header: resp.Header, body: b}, nil
}

func mustSend(t *testing.T, method, url, contentType, body string) answer {
	t.Helper()
	a, err := send(method, url, contentType, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return a
}

func statusOf(t *testing.T, a answer) object.Status {
	t.Helper()
	var st object.Status
	if err := json.Unmarshal(a.body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("HTTP %d: body is not a Status: %s", a.code, a.body)
	}
	return st
}

// TestUnconditionalUpdateNeverConflicts: a PUT without resourceVersion
// means "over the latest version", so however contended the object it is
// applied and answered 200, never 409.
func TestUnconditionalUpdateNeverConflicts(t *testing.T) {
	base := startAPI(t, conn(t))
	coll := base + "/apis/apps/v1/namespaces/default/deployments"
	obj := coll + "/contended"
	mustCode(t, call(t, "POST", coll, "", deploy("contended", "start")), http.StatusCreated, "")

	stop := make(chan struct{})
	changerDone := make(chan struct{})
	changes := 0
	// The changer keeps making conditional updates, retrying its own conflicts.
	go func() {
		defer close(changerDone)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			a, err := send("GET", obj, "", "")
			if err != nil || a.code != http.StatusOK {
				t.Errorf("changer GET: %v %d %s", err, a.code, a.body)
				return
			}
			var o object.Object
			if err := json.Unmarshal(a.body, &o); err != nil {
				t.Errorf("changer: %v", err)
				return
			}
			if o.Metadata.Annotations == nil {
				o.Metadata.Annotations = map[string]string{}
			}
			o.Metadata.Annotations["changer"] = strconv.Itoa(n)
			body, _ := json.Marshal(o)
			a, err = send("PUT", obj, "application/json", string(body))
			switch {
			case err != nil:
				t.Errorf("changer PUT: %v", err)
				return
			case a.code == http.StatusOK:
				changes++
			case a.code != http.StatusConflict:
				t.Errorf("changer PUT: HTTP %d %s", a.code, a.body)
				return
			}
		}
	}()

	const writers, rounds = 10, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				a, err := send("PUT", obj, "application/json", deploy("contended", fmt.Sprintf("w%d-%d", w, i)))
				if err != nil {
					t.Errorf("writer %d PUT %d: %v", w, i, err)
					return
				}
				if a.code != http.StatusOK {
					t.Errorf("writer %d PUT %d without resourceVersion: HTTP %d %s, want 200", w, i, a.code, a.body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-changerDone
	if t.Failed() {
		return
	}
	got := call(t, "GET", obj, "", "")
	mustCode(t, got, http.StatusOK, "")
	if !strings.HasPrefix(got.obj.Metadata.Labels["tier"], "w") {
		t.Fatalf("final labels %v: no unconditional update landed", got.obj.Metadata.Labels)
	}
	t.Logf("the changer landed %d conditional updates meanwhile", changes)
}

// TestMergePatchWithoutResourceVersionLands: concurrent merge patches
// without resourceVersion are each re-applied to the latest version until
// they land; none is lost.
func TestMergePatchWithoutResourceVersionLands(t *testing.T) {
	base := startAPI(t, conn(t))
	coll := base + "/apis/apps/v1/namespaces/default/deployments"
	obj := coll + "/patched"
	mustCode(t, call(t, "POST", coll, "", deploy("patched", "start")), http.StatusCreated, "")

	const patchers, each = 10, 5
	var wg sync.WaitGroup
	for p := range patchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				patch := fmt.Sprintf(`{"metadata":{"labels":{"p%d-%d":"v"}}}`, p, i)
				a, err := send("PATCH", obj, "application/merge-patch+json", patch)
				if err != nil {
					t.Errorf("patch %s: %v", patch, err)
					return
				}
				if a.code != http.StatusOK {
					t.Errorf("patch %s without resourceVersion: HTTP %d %s, want 200", patch, a.code, a.body)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := call(t, "GET", obj, "", "")
	mustCode(t, got, http.StatusOK, "")
	var missing []string
	for p := range patchers {
		for i := range each {
			if k := fmt.Sprintf("p%d-%d", p, i); got.obj.Metadata.Labels[k] != "v" {
				missing = append(missing, k)
			}
		}
	}
	if len(missing) > 0 || got.obj.Metadata.Labels["tier"] != "start" {
		t.Fatalf("labels lost by concurrent patches: missing %v; labels %v", missing, got.obj.Metadata.Labels)
	}
}

// TestWatchFromFutureRevision: resuming a watch from a resourceVersion the
// store has not reached fails at once with 504 Timeout and the cause
// ResourceVersionTooLarge, as Kubernetes answers, rather than hanging.
func TestWatchFromFutureRevision(t *testing.T) {
	base := startAPI(t, conn(t))
	pods := base + "/api/v1/namespaces/default/pods"
	mustCode(t, call(t, "POST", pods, "", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`), http.StatusCreated, "")
	var l object.List
	if err := json.Unmarshal(call(t, "GET", pods, "", "").body, &l); err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseUint(l.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("list resourceVersion %q: %v", l.Metadata.ResourceVersion, err)
	}
	future := strconv.FormatUint(rv+1_000_000, 10)
	for _, u := range []string{
		pods + "?watch=1&resourceVersion=" + future,
		pods + "/p?watch=true&resourceVersion=" + future,
		base + "/api/v1/pods?watch=1&resourceVersion=" + future,
	} {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := admin(t).Do(req)
		if err != nil {
			cancel()
			t.Fatalf("watch %s: %v (after %s)", u, err, time.Since(start))
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil {
			t.Fatalf("watch %s: reading the answer: %v (after %s)", u, err, time.Since(start))
		}
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("watch %s: HTTP %d %s, want 504", u, resp.StatusCode, body)
		}
		st := statusOf(t, answer{code: resp.StatusCode, body: body})
		if st.Reason != object.ReasonTimeout || st.Details == nil || len(st.Details.Causes) != 1 ||
			st.Details.Causes[0].Type != "ResourceVersionTooLarge" {
			t.Fatalf("watch %s: Status %s, want reason Timeout with cause ResourceVersionTooLarge", u, body)
		}
	}
}

// TestInt32BoundsAtAdmission: a number that does not fit the int32 a
// controller decodes it into is refused with 422 naming the field, on
// create and on patch; the largest int32 is accepted.
func TestInt32BoundsAtAdmission(t *testing.T) {
	base := startAPI(t, conn(t))
	coll := base + "/apis/apps/v1/namespaces/default/deployments"
	withReplicas := func(name, n string) string {
		return strings.Replace(deploy(name, "t"), `"replicas":2`, `"replicas":`+n, 1)
	}
	withMaxUnavailable := func(name, n string) string {
		return strings.Replace(deploy(name, "t"), `"replicas":2,`,
			`"replicas":2,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":`+n+`}},`, 1)
	}
	mustInvalid := func(r response, field string) {
		t.Helper()
		mustCode(t, r, http.StatusUnprocessableEntity, object.ReasonInvalid)
		if r.status.Details == nil || !slices.ContainsFunc(r.status.Details.Causes, func(c object.StatusCause) bool { return c.Field == field }) {
			t.Fatalf("422 without a cause naming %s: %s", field, r.body)
		}
	}

	mustInvalid(call(t, "POST", coll, "", withReplicas("too-many", "2147483648")), "spec.replicas")
	mustCode(t, call(t, "GET", coll+"/too-many", "", ""), http.StatusNotFound, object.ReasonNotFound)
	ok := call(t, "POST", coll, "", withReplicas("max", "2147483647"))
	mustCode(t, ok, http.StatusCreated, "")
	if !strings.Contains(string(ok.obj.Spec), `"replicas":2147483647`) {
		t.Fatalf("stored spec %s, want replicas 2147483647", ok.obj.Spec)
	}
	mustInvalid(call(t, "POST", coll, "", withMaxUnavailable("too-unavailable", "2147483648")), "spec.strategy.rollingUpdate.maxUnavailable")
	mustCode(t, call(t, "POST", coll, "", withMaxUnavailable("max-unavailable", "2147483647")), http.StatusCreated, "")

	// The same bound holds for a patch and an update.
	mustInvalid(call(t, "PATCH", coll+"/max", "application/merge-patch+json", `{"spec":{"replicas":2147483648}}`), "spec.replicas")
	mustInvalid(call(t, "PUT", coll+"/max", "", withReplicas("max", "2147483648")), "spec.replicas")
	mustInvalid(call(t, "PATCH", coll+"/max", "application/merge-patch+json",
		`{"spec":{"strategy":{"rollingUpdate":{"maxUnavailable":2147483648}}}}`), "spec.strategy.rollingUpdate.maxUnavailable")
	got := call(t, "GET", coll+"/max", "", "")
	mustCode(t, got, http.StatusOK, "")
	if !strings.Contains(string(got.obj.Spec), `"replicas":2147483647`) {
		t.Fatalf("a refused write changed the object: %s", got.obj.Spec)
	}
}

// TestBusGoneAnswers503: once its bus is gone, the API answers every
// resource request with 503 and Retry-After (a client retries), never 500,
// and /readyz says it is not ready.
func TestBusGoneAnswers503(t *testing.T) {
	server := bustest.Conn(t)
	base := startAPI(t, bustest.Client(t, server))
	coll := base + "/apis/apps/v1/namespaces/default/deployments"
	mustCode(t, call(t, "POST", coll, "", deploy("before", "t")), http.StatusCreated, "")

	server.Close()

	check := func(method, url, body string) answer {
		a, err := send(method, url, "", body)
		if err != nil {
			t.Fatalf("%s %s with the bus gone: %v", method, url, err)
		}
		if a.code >= 500 && a.code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s with the bus gone: HTTP %d %s, want 503", method, url, a.code, a.body)
		}
		return a
	}
	poll.Until(t, "the API to notice its bus is gone", 20*time.Second, func() bool {
		return check("GET", coll+"/before", "").code == http.StatusServiceUnavailable
	})
	for i := range 3 {
		for _, req := range []struct{ method, url, body string }{
			{"GET", coll + "/before", ""},
			{"GET", coll, ""},
			{"GET", base + "/apis/apps/v1/deployments", ""},
			{"POST", coll, deploy(fmt.Sprintf("after-%d", i), "t")},
			{"PATCH", coll + "/before", `{"metadata":{"labels":{"x":"y"}}}`},
			{"DELETE", coll + "/before", ""},
			{"GET", base + "/readyz", ""},
		} {
			a := check(req.method, req.url, req.body)
			if a.code != http.StatusServiceUnavailable {
				t.Fatalf("%s %s with the bus gone: HTTP %d %s, want 503", req.method, req.url, a.code, a.body)
			}
			if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra <= 0 {
				t.Fatalf("%s %s: 503 with Retry-After %q, want a positive number of seconds", req.method, req.url, a.header.Get("Retry-After"))
			}
			if st := statusOf(t, a); st.Reason != object.ReasonServiceUnavailable {
				t.Fatalf("%s %s: Status %+v, want reason ServiceUnavailable", req.method, req.url, st)
			}
		}
	}
}

// TestDeletedDefinitionDropsItsObjects: deleting a ResourceDefinition drops
// its objects, so defining the kind again starts empty, cycle after cycle,
// whichever replica deletes and whichever defines again; and the kind
// defined again is served, reads and writes, by every replica. Two
// replicas run over one bus connection, as in custom_test.go, and over a
// connection each, as two API processes do.
func TestDeletedDefinitionDropsItsObjects(t *testing.T) {
	t.Run("one connection", func(t *testing.T) {
		c := conn(t)
		definitionCycles(t, []string{startAPI(t, c), startAPI(t, c)})
	})
	t.Run("a connection each", func(t *testing.T) {
		c := conn(t)
		definitionCycles(t, []string{startAPI(t, c), startAPI(t, bustest.Client(t, c))})
	})
}

// definitionCycles defines a kind, fills it, deletes the definition and
// defines it again, twenty times: the old objects must never come back.
func definitionCycles(t *testing.T, replicas []string) {
	defs := "/apis/homeostat.io/v1/resourcedefinitions"
	widgets := "/apis/example.com/v1/namespaces/default/widgets"
	expect := func(cycle int, r response, code int, what string) {
		t.Helper()
		if r.code != code {
			t.Fatalf("cycle %d: %s: HTTP %d %s, want %d", cycle, what, r.code, r.body, code)
		}
	}
	createWidget := func(cycle, replica int, name string) {
		t.Helper()
		w := fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":%q},"spec":{"size":1}}`, name)
		expect(cycle, call(t, "POST", replicas[replica]+widgets, "", w), http.StatusCreated, fmt.Sprintf("POST widget %s on replica %d", name, replica))
	}
	list := func(cycle, replica int) []string {
		t.Helper()
		lr := call(t, "GET", replicas[replica]+widgets, "", "")
		expect(cycle, lr, http.StatusOK, fmt.Sprintf("LIST widgets on replica %d", replica))
		var l object.List
		if err := json.Unmarshal(lr.body, &l); err != nil {
			t.Fatal(err)
		}
		names := []string{}
		for _, o := range l.Items {
			names = append(names, o.Metadata.Name)
		}
		return names
	}
	for cycle := range 20 {
		a, b := cycle%2, (cycle+1)%2
		expect(cycle, call(t, "POST", replicas[a]+defs, "application/yaml", widgetDef), http.StatusCreated, "define widgets")
		for i := range 3 {
			createWidget(cycle, i%2, fmt.Sprintf("c%d-w%d", cycle, i))
		}
		for r := range replicas {
			if names := list(cycle, r); len(names) != 3 {
				t.Fatalf("cycle %d: replica %d lists %v, want the 3 widgets just created", cycle, r, names)
			}
		}
		expect(cycle, call(t, "DELETE", replicas[b]+defs+"/widgets.example.com", "", ""), http.StatusOK, "delete the definition")
		expect(cycle, call(t, "POST", replicas[a]+defs, "application/yaml", widgetDef), http.StatusCreated, "define widgets again")
		for r := range replicas {
			if names := list(cycle, r); len(names) != 0 {
				t.Fatalf("cycle %d: objects of the deleted definition came back on replica %d: %v", cycle, r, names)
			}
			old := call(t, "GET", replicas[r]+widgets+fmt.Sprintf("/c%d-w0", cycle), "", "")
			if old.code != http.StatusNotFound || old.status.Reason != object.ReasonNotFound || old.status.Details == nil || old.status.Details.Name != fmt.Sprintf("c%d-w0", cycle) {
				t.Fatalf("cycle %d: GET an old widget on replica %d: HTTP %d %s, want 404 naming it", cycle, r, old.code, old.body)
			}
		}
		// The kind defined again is served, for writes too, by both replicas.
		createWidget(cycle, b, fmt.Sprintf("c%d-again-b", cycle))
		createWidget(cycle, a, fmt.Sprintf("c%d-again-a", cycle))
		expect(cycle, call(t, "DELETE", replicas[a]+defs+"/widgets.example.com", "", ""), http.StatusOK, "delete the definition again")
	}
}

// TestNamespaceSubresources: /api/v1/namespaces/{name}/{sub} is shaped like
// a namespaced collection; raw and reconcile must still reach the
// Namespace's subresources, as status does.
func TestNamespaceSubresources(t *testing.T) {
	base := startAPI(t, conn(t))
	ns := base + "/api/v1/namespaces/default"
	r := mustSend(t, "GET", ns+"/raw", "", "")
	if r.code != http.StatusOK || r.header.Get("X-Resource-Version") == "" || !strings.Contains(string(r.body), `"name":"default"`) {
		t.Fatalf("GET namespaces/default/raw: HTTP %d %q (X-Resource-Version %q)", r.code, r.body, r.header.Get("X-Resource-Version"))
	}
	rc := mustSend(t, "GET", ns+"/reconcile", "", "")
	if rc.code != http.StatusOK || !strings.Contains(string(rc.body), `"kind":"ReconcileState"`) {
		t.Fatalf("GET namespaces/default/reconcile: HTTP %d %s", rc.code, rc.body)
	}
	mustCode(t, call(t, "GET", base+"/api/v1/namespaces/nope/raw", "", ""), http.StatusNotFound, object.ReasonNotFound)
	mustCode(t, call(t, "PUT", ns+"/raw", "", `{}`), http.StatusMethodNotAllowed, object.ReasonMethodNotAllowed)
	// Objects in a namespace keep their own raw subresource.
	mustCode(t, call(t, "POST", ns+"/pods", "", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`), http.StatusCreated, "")
	if r := mustSend(t, "GET", ns+"/pods/p/raw", "", ""); r.code != http.StatusOK || !strings.Contains(string(r.body), `"name":"p"`) {
		t.Fatalf("GET pods/p/raw: HTTP %d %s", r.code, r.body)
	}
}
