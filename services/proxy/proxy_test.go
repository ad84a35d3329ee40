package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/proxy"
	"github.com/homeostat/homeostat/testenv"
	"github.com/homeostat/homeostat/testenv/poll"
)

// webService starts the API and the controllers and makes Service web,
// of the pods labelled app=web, on a free port it returns.
func webService(t testing.TB) (*testenv.Env, int) {
	e := testenv.New(t)
	e.Controllers()
	port := freePort(t)
	e.Apply(fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{name: http, port: %d, targetPort: http}]}
`, port))
	return e, port
}

// runProxy runs a proxy until the test ends.
func runProxy(t testing.TB, cfg proxy.Config) *proxy.Proxy {
	px, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- px.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
	})
	return px
}

// backend is an HTTP server standing for a pod's process: it answers
// with its name.
type backend struct {
	name string
	port int32
	srv  *http.Server
}

func startBackend(t testing.TB, name string) *backend {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, port: int32(ln.Addr().(*net.TCPAddr).Port)}
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, name) }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = b.srv.Serve(ln) }()
	t.Cleanup(func() { _ = b.srv.Close() })
	return b
}

// freePort is a port nothing listens on now, for a Service: the proxy
// listens on a Service's own port.
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// podOn makes a pod whose process is b, as its node's agent would report
// it: running at 127.0.0.1, its port named http at b's port.
func podOn(t testing.TB, e *testenv.Env, b *backend, ready bool) *object.Object {
	t.Helper()
	e.Apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c, command: [x], ports: [{name: http}]}]}
`, b.name))
	setStatus(t, e, b, ready)
	return e.Get("pods", b.name)
}

func setStatus(t testing.TB, e *testenv.Env, b *backend, ready bool) {
	t.Helper()
	st := object.ConditionFalse
	if ready {
		st = object.ConditionTrue
	}
	status := kinds.PodStatus{Phase: kinds.PodRunning, PodIP: "127.0.0.1", HostIP: "127.0.0.1",
		Conditions: []object.Condition{{Type: kinds.PodReady, Status: st, LastTransitionTime: time.Now().UTC().Truncate(time.Second)}},
		ContainerStatuses: []kinds.ContainerStatus{{Name: "c", Ready: ready,
			State: kinds.ContainerState{Running: &kinds.StateRunning{StartedAt: time.Now().UTC().Truncate(time.Second)}},
			Ports: []kinds.ContainerPort{{Name: "http", ContainerPort: b.port, Protocol: "TCP"}}}}}
	body, _ := json.Marshal(map[string]any{"status": status})
	if err := e.C.Do(e.Ctx, http.MethodPatch, e.Res("pods").Path("default", b.name)+"/status", body, "application/merge-patch+json", nil); err != nil {
		t.Fatalf("pod status: %v", err)
	}
}

// routes records what the proxy routes to, by Service port.
type routes struct {
	mu   sync.Mutex
	last map[string][]string
}

func (r *routes) on(rt proxy.Routes) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[rt.Service+"/"+rt.Port] = rt.Endpoints
}

func (r *routes) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.last[key])
}

// get asks the Service through the proxy on a connection of its own.
func get(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// The proxy passes a Service's connections to its ready endpoints in turn;
// an endpoint that stops being ready gets none from then on; one that
// refuses is passed over for the next; a pod out of rotation is said so
// by Unrouted.
func TestProxyRoutesToReadyEndpoints(t *testing.T) {
	e, port := webService(t)
	a, b := startBackend(t, "a"), startBackend(t, "b")
	podA := podOn(t, e, a, true)
	podOn(t, e, b, true)

	rs := &routes{last: map[string][]string{}}
	px := runProxy(t, proxy.Config{Bus: e.Client(), Address: "127.0.0.1", OnRoutes: rs.on})
	key := podA.Metadata.Namespace + ".web/http"
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	poll.Until(t, "both endpoints routed", 10*time.Second, func() bool { return rs.count(key) == 2 })
	seen := map[string]int{}
	for range 10 {
		got, err := get(url)
		if err != nil {
			t.Fatalf("through the proxy: %v", err)
		}
		seen[got]++
	}
	if seen["a"] != 5 || seen["b"] != 5 {
		t.Fatalf("10 connections went %v; want 5 to each endpoint in turn", seen)
	}

	// b is not ready: none of its connections any more.
	setStatus(t, e, b, false)
	poll.Until(t, "b out of rotation", 10*time.Second, func() bool { return rs.count(key) == 1 })
	uctx, ucancel := context.WithTimeout(context.Background(), 10*time.Second)
	px.Unrouted(uctx, e.Get("pods", "b").Metadata.UID)
	if uctx.Err() != nil {
		t.Fatal("Unrouted did not return for a pod out of rotation")
	}
	ucancel()
	for range 6 {
		if got, err := get(url); err != nil || got != "a" {
			t.Fatalf("with b not ready: %q, %v", got, err)
		}
	}

	// b is back; a's process dies while a is still listed as ready: its
	// connections are refused and passed on to b.
	setStatus(t, e, b, true)
	poll.Until(t, "b back in rotation", 10*time.Second, func() bool { return rs.count(key) == 2 })
	_ = a.srv.Close()
	for i := range 10 {
		if got, err := get(url); err != nil || got != "b" {
			t.Fatalf("request %d with a's process gone: %q, %v", i, got, err)
		}
	}

	// The Service's port closes with the Service.
	if err := e.C.Do(e.Ctx, http.MethodDelete, e.Res("services").Path("default", "web"), nil, "", nil); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the Service's port closed", 10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil && strings.Contains(err.Error(), "refused")
	})
}
