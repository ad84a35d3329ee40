package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/pki"
	"github.com/homeostat/homeostat/testenv/poll"
)

// identity is who a request is made as: a client certificate or a token.
type identity struct {
	name  string
	hc    *http.Client
	token string
}

func certIdentity(t *testing.T, user string, groups ...string) identity {
	t.Helper()
	is, err := authority(t).CA.Issue(pki.Request{CommonName: user, Organizations: groups, Usage: pki.ClientAuth, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return identity{name: user, hc: clientWith(t, is)}
}

// do sends a request as the identity; a watch is ended once its answer
// has begun.
func (id identity) do(t *testing.T, method, url, body string, header ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if rd != nil {
		req, err = http.NewRequestWithContext(ctx, method, url, rd)
	}
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	if id.token != "" {
		req.Header.Set("Authorization", "Bearer "+id.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := id.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// rbacFixture is an API with namespaces team and other, a pod in each,
// and the users, groups and ServiceAccount the matrix asks as.
type rbacFixture struct {
	base string
	ids  map[string]identity
}

func newRBACFixture(t *testing.T) *rbacFixture {
	t.Helper()
	base := startAPI(t, conn(t))
	post := func(path, body string) {
		t.Helper()
		mustCode(t, call(t, "POST", base+path, "application/json", body), 201, "")
	}
	for _, ns := range []string{"team", "other"} {
		post("/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`)
		for _, p := range []string{"web-1", "web-2"} {
			post("/api/v1/namespaces/"+ns+"/pods", `{"metadata":{"name":"`+p+`"},"spec":{"containers":[{"name":"c","command":["sleep","1"]}]}}`)
		}
		post("/apis/apps/v1/namespaces/"+ns+"/deployments", deploy("web", "front"))
	}
	post("/api/v1/namespaces/team/serviceaccounts", `{"metadata":{"name":"bot"}}`)
	rb := func(ns, name, kind, role, subjects string) {
		t.Helper()
		post("/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings", fmt.Sprintf(
			`{"metadata":{"name":%q},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":%q,"name":%q},"subjects":%s}`, name, kind, role, subjects))
	}
	crb := func(name, role, subjects string) {
		t.Helper()
		post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", fmt.Sprintf(
			`{"metadata":{"name":%q},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":%q},"subjects":%s}`, name, role, subjects))
	}
	rb("team", "alice-edit", "ClusterRole", "edit", `[{"kind":"User","name":"alice"}]`)
	rb("team", "bob-view", "ClusterRole", "view", `[{"kind":"User","name":"bob"}]`)
	rb("team", "bot-view", "ClusterRole", "view", `[{"kind":"ServiceAccount","name":"bot"}]`)
	post("/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
		`{"metadata":{"name":"web-1-reader"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods","pods/log"],"resourceNames":["web-1"]}]}`)
	rb("team", "dave-web-1", "Role", "web-1-reader", `[{"kind":"User","name":"dave"}]`)
	crb("carol-view", "view", `[{"kind":"User","name":"carol"}]`)
	post("/apis/rbac.authorization.k8s.io/v1/clusterroles",
		`{"metadata":{"name":"node-reader"},"rules":[{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["nodes"]}]}`)
	crb("ops-nodes", "node-reader", `[{"kind":"Group","name":"ops"}]`)

	_, tr := issue(t, base, "team", "bot", `{}`)
	ids := map[string]identity{
		"admin":     {name: "admin", hc: admin(t)},
		"alice":     certIdentity(t, "alice"),
		"bob":       certIdentity(t, "bob"),
		"carol":     certIdentity(t, "carol"),
		"dave":      certIdentity(t, "dave"),
		"eve":       certIdentity(t, "eve", "ops"),
		"bot":       {name: "bot", hc: clientWith(t, nil), token: tokenOf(t, tr)},
		"anonymous": {name: "anonymous", hc: clientWith(t, nil)},
	}
	return &rbacFixture{base: base, ids: ids}
}

// cell is one request; its row says, per identity, whether it is allowed.
type cell struct {
	what, method, path, body string
	allowed                  []string // the rest are denied (403), anonymous 401
	header                   []string
}

const (
	core = "/api/v1/namespaces/"
	apps = "/apis/apps/v1/namespaces/"
)

// The authorization matrix: every identity against every request, each
// asserted allowed or denied. Writes are dry runs, so that the state the
// matrix reads stays the same.
func TestAuthorizationMatrix(t *testing.T) {
	f := newRBACFixture(t)
	everyone := []string{"admin", "alice", "bob", "carol", "dave", "eve", "bot"}
	podBody := `{"metadata":{"name":"new"},"spec":{"containers":[{"name":"c","command":["sleep","1"]}]}}`
	cells := []cell{
		{what: "get a pod", method: "GET", path: core + "team/pods/web-1", allowed: []string{"admin", "alice", "bob", "carol", "dave", "bot"}},
		{what: "get a pod not named in the role", method: "GET", path: core + "team/pods/web-2", allowed: []string{"admin", "alice", "bob", "carol", "bot"}},
		{what: "list pods", method: "GET", path: core + "team/pods", allowed: []string{"admin", "alice", "bob", "carol", "bot"}},
		{what: "list pods elsewhere", method: "GET", path: core + "other/pods", allowed: []string{"admin", "carol"}},
		{what: "list pods of every namespace", method: "GET", path: "/api/v1/pods", allowed: []string{"admin", "carol"}},
		{what: "watch pods", method: "GET", path: core + "team/pods?watch=1", allowed: []string{"admin", "alice", "bob", "carol", "bot"}},
		{what: "watch pods elsewhere", method: "GET", path: core + "other/pods?watch=1", allowed: []string{"admin", "carol"}},
		{what: "create a pod", method: "POST", path: core + "team/pods?dryRun=All", body: podBody, allowed: []string{"admin", "alice"}},
		{what: "create a pod elsewhere", method: "POST", path: core + "other/pods?dryRun=All", body: podBody, allowed: []string{"admin"}},
		{what: "delete a pod", method: "DELETE", path: core + "team/pods/web-2?dryRun=All", allowed: []string{"admin", "alice"}},
		{what: "delete every pod", method: "DELETE", path: core + "team/pods?dryRun=All", allowed: []string{"admin", "alice"}},
		{what: "patch a deployment", method: "PATCH", path: apps + "team/deployments/web?dryRun=All", body: `{"spec":{"replicas":3}}`, allowed: []string{"admin", "alice"}},
		{what: "update a pod's status", method: "PUT", path: core + "team/pods/web-1/status?dryRun=All",
			body: `{"metadata":{"name":"web-1"},"spec":{"containers":[{"name":"c","command":["sleep","1"]}]},"status":{"phase":"Running"}}`, allowed: []string{"admin"}},
		{what: "read a pod's status", method: "GET", path: core + "team/pods/web-1/status", allowed: []string{"admin", "alice", "bob", "carol", "bot"}},
		{what: "read a pod's log", method: "GET", path: core + "team/pods/web-1/log", allowed: []string{"admin", "alice", "bob", "carol", "dave", "bot"}},
		{what: "read another pod's log", method: "GET", path: core + "team/pods/web-2/log", allowed: []string{"admin", "alice", "bob", "carol", "bot"}},
		{what: "reconcile state", method: "GET", path: apps + "team/deployments/web/reconcile", allowed: []string{"admin", "alice", "bob", "carol", "bot"}},
		{what: "list nodes", method: "GET", path: "/api/v1/nodes", allowed: []string{"admin", "eve"}},
		{what: "issue a token", method: "POST", path: core + "team/serviceaccounts/bot/token?dryRun=All", body: `{}`, allowed: []string{"admin", "alice"}},
		{what: "list roles", method: "GET", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles", allowed: []string{"admin"}},
		{what: "create a cluster role", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles?dryRun=All",
			body: `{"metadata":{"name":"x"},"rules":[]}`, allowed: []string{"admin"}},
		{what: "discovery", method: "GET", path: "/apis", allowed: everyone},
		{what: "self access review", method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body: `{"spec":{"resourceAttributes":{"verb":"get","resource":"pods","namespace":"team"}}}`, allowed: everyone},
		{what: "another's access review", method: "POST", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			body: `{"spec":{"user":"bob","resourceAttributes":{"verb":"get","resource":"pods","namespace":"team"}}}`, allowed: []string{"admin"}},
		{what: "impersonate", method: "GET", path: "/apis", header: []string{"Impersonate-User", "bob"}, allowed: []string{"admin"}},
	}
	// Bindings reach the API's caches a moment after they are written:
	// poll until the whole matrix holds, then report what does not.
	var wrong []string
	ok := poll.Within(20*time.Second, func() bool {
		wrong = wrong[:0]
		for _, c := range cells {
			for _, who := range append(everyone, "anonymous") {
				want := 403
				switch {
				case who == "anonymous":
					want = 401
				case contains(c.allowed, who):
					want = 0 // anything but 401 and 403
				}
				got := f.ids[who].do(t, c.method, f.base+c.path, c.body, c.header...)
				if want == 0 && (got == 401 || got == 403) || want != 0 && got != want {
					wrong = append(wrong, fmt.Sprintf("%s: %s %s %s: %d, want %s", c.what, who, c.method, c.path, got, map[int]string{0: "allowed", 401: "401", 403: "403"}[want]))
				}
			}
		}
		return len(wrong) == 0
	})
	if !ok {
		t.Fatalf("%d cells wrong:\n%s", len(wrong), strings.Join(wrong, "\n"))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
