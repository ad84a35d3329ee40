package api_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

// hold starts a request as id that stays in flight, its body unfinished,
// until the returned func is called. It is written by hand on its own TLS
// connection, so that the server has its headers at once, whatever a
// client library would buffer.
func hold(t *testing.T, id identity, target string) (release func()) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	cfg := id.hc.Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", u.Host, cfg)
	if err != nil {
		t.Fatal(err)
	}
	auth := ""
	if id.token != "" {
		auth = "Authorization: Bearer " + id.token + "\r\n"
	}
	head := "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\n" + auth +
		"Content-Length: 1000\r\n\r\n{\"metadata\":"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	return func() { _ = conn.Close() }
}

// openWatchAs opens a watch as id and returns its response, open.
func openWatchAs(t *testing.T, ctx context.Context, id identity, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := id.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A user beyond its limits is answered 429 with Retry-After at once, and
// only that user: others, and the nodes' heartbeats, go on.
func TestLoadShedding(t *testing.T) {
	c := conn(t)
	base := startAPI(t, c, func(cfg *api.Config) { cfg.Limits = api.Limits{InFlight: 2, LongRunning: 2, MaxListPage: 3} })
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces", "application/json", `{"metadata":{"name":"team"}}`), 201, "")
	for _, u := range []string{"alice", "bob"} {
		mustCode(t, call(t, "POST", base+rbacAPI+"namespaces/team/rolebindings", "application/json", bindingJSON(u+"-edit", "ClusterRole", "edit", u)), 201, "")
	}
	alice, bob := certIdentity(t, "alice"), certIdentity(t, "bob")
	pods := base + core + "team/pods"
	poll.Until(t, "the bindings in effect", 20*time.Second, func() bool {
		return alice.do(t, "GET", pods, "") == 200 && bob.do(t, "GET", pods, "") == 200
	})

	// Two requests of alice's held in flight: a third is shed.
	releases := []func(){hold(t, alice, pods), hold(t, alice, pods)}
	var shed response
	poll.Until(t, "alice's third request shed", 20*time.Second, func() bool {
		shed = callAs(t, alice.hc, "", "GET", pods, "", "")
		return shed.code == 429
	})
	if shed.status.Reason != object.ReasonTooManyRequests || !strings.Contains(shed.status.Message, `user "alice"`) {
		t.Fatalf("shed with %s", shed.body)
	}
	resp, err := alice.hc.Get(pods)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("while shed: %d, Retry-After %q; want 429 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Another user, the admin and a node's heartbeat are not held up.
	if code := bob.do(t, "GET", pods, ""); code != 200 {
		t.Fatalf("bob while alice is shed: %d", code)
	}
	mustCode(t, call(t, "GET", pods, "", ""), 200, "")
	leases, err := c.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lease, err := leases.Acquire(context.Background(), "node-1", "node-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Renew(context.Background(), lease, 10*time.Second); err != nil {
		t.Fatalf("a heartbeat while alice is shed: %v", err)
	}
	if code := alice.do(t, "GET", pods, ""); code != 429 {
		t.Fatalf("alice still holds two requests, yet got %d", code)
	}
	for _, r := range releases {
		r()
	}
	poll.Until(t, "alice served again", 20*time.Second, func() bool { return alice.do(t, "GET", pods, "") == 200 })

	// Watches count apart: two open, a third is shed, plain requests are not.
	ctx, cancel := context.WithCancel(context.Background())
	w1, w2 := openWatchAs(t, ctx, alice, pods+"?watch=1"), openWatchAs(t, ctx, alice, pods+"?watch=1")
	if w1.StatusCode != 200 || w2.StatusCode != 200 {
		t.Fatalf("watches: %d %d", w1.StatusCode, w2.StatusCode)
	}
	if code := alice.do(t, "GET", pods+"?watch=1", ""); code != 429 {
		t.Fatalf("a third watch: %d, want 429", code)
	}
	if code := alice.do(t, "GET", pods, ""); code != 200 {
		t.Fatalf("a list beside two watches: %d", code)
	}
	cancel()
	w1.Body.Close()
	w2.Body.Close()
	poll.Until(t, "alice may watch again", 20*time.Second, func() bool {
		return alice.do(t, "GET", pods+"?watch=1", "") == 200
	})

	// A list page is at most MaxListPage.
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		mustCode(t, call(t, "POST", pods, "application/json", `{"metadata":{"name":"`+name+`"},"spec":{"containers":[{"name":"c","command":["sleep","1"]}]}}`), 201, "")
	}
	r := callAs(t, alice.hc, "", "GET", pods+"?limit=100", "", "")
	var list object.List
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Items) != 3 || list.Metadata.Continue == "" {
		t.Fatalf("list with limit=100 over a page of 3: %d items, continue %q, %v", len(list.Items), list.Metadata.Continue, err)
	}
}
