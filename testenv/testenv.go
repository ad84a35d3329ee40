// Package testenv starts Homeostat's services over a real embedded NATS
// server for integration tests: the API, the controllers, schedulers and
// simulated nodes, each stopped when the test ends, plus helpers to apply
// manifests and wait for conditions.
package testenv

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/manifest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/pki/pkitest"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/services/controllers"
	"github.com/homeostat/homeostat/services/nodeagent"
	"github.com/homeostat/homeostat/services/scheduler"
	"github.com/homeostat/homeostat/testenv/poll"
)

// Env is a running API over an embedded NATS server, served over TLS.
type Env struct {
	T    testing.TB
	Conn *bus.Conn
	// C and HTTP are clients in system:masters.
	C    *client.Client
	HTTP *http.Client
	URL  string
	Ctx  context.Context
	// PKI is the authority of the API's certificates.
	PKI *pkitest.PKI
}

// New starts the server and the API.
func New(t testing.TB) *Env {
	t.Helper()
	conn := bustest.Conn(t)
	e := &Env{T: t, Conn: conn, Ctx: context.Background()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.PKI = pkitest.New(t)
	svc, err := api.New(api.Config{Bus: conn, Listener: ln, CompactEvery: time.Hour, TLS: e.PKI.Server()})
	if err != nil {
		t.Fatal(err)
	}
	e.run("api", svc.Run)
	e.URL = "https://" + ln.Addr().String()
	e.HTTP = e.PKI.Admin()
	e.C = client.New(e.URL, e.HTTP)
	e.Eventually("api ready", 10*time.Second, func() bool {
		resp, err := e.HTTP.Get(e.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return e
}

// run runs a service until the test ends.
func (e *Env) run(name string, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			e.T.Errorf("%s: %v", name, err)
		}
	}
	e.T.Cleanup(stop)
	return stop
}

// Client connects a second client to the server, as another process would.
func (e *Env) Client() *bus.Conn { return bustest.Client(e.T, e.Conn) }

// Controllers starts the controllers on their own connection.
func (e *Env) Controllers(mutate ...func(*controllers.Config)) (stop func()) {
	cfg := controllers.Config{Bus: e.Client(), Backoff: reconcile.Backoff{Initial: 5 * time.Millisecond, Max: 500 * time.Millisecond, Multiplier: 2}}
	for _, m := range mutate {
		m(&cfg)
	}
	svc, err := controllers.New(cfg)
	if err != nil {
		e.T.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := svc.Setup(ctx); err != nil {
		e.T.Fatal(err)
	}
	stop = e.run("controllers", svc.Run)
	select {
	case <-svc.Ready():
	case <-time.After(15 * time.Second):
		e.T.Fatal("controllers not ready")
	}
	return stop
}

// Scheduler starts a scheduler replica; it returns the service and its stop.
func (e *Env) Scheduler(identity string) (*scheduler.Service, func()) {
	svc, err := scheduler.New(scheduler.Config{Bus: e.Client(), Identity: identity, LeaseTTL: 3 * time.Second})
	if err != nil {
		e.T.Fatal(err)
	}
	return svc, e.run("scheduler "+identity, svc.Run)
}

// Node starts one simulated node agent.
func (e *Env) Node(name string, capacity kinds.ResourceList, labels map[string]string, mutate ...func(*nodeagent.Config)) (stop func()) {
	cfg := nodeagent.Config{Bus: e.Client(), NodeName: name, Runtime: nodeagent.NewSimulated(0), Capacity: capacity, Labels: labels,
		HeartbeatEvery: 500 * time.Millisecond, Grace: 2 * time.Second}
	for _, m := range mutate {
		m(&cfg)
	}
	a, err := nodeagent.New(cfg)
	if err != nil {
		e.T.Fatal(err)
	}
	stop = e.run("node "+name, a.Run)
	e.Eventually("node "+name+" registered", 10*time.Second, func() bool {
		_, err := e.C.Get(e.Ctx, e.Res("nodes"), "", name)
		return err == nil
	})
	return stop
}

// Eventually polls cond until it holds or the time is up.
func (e *Env) Eventually(what string, within time.Duration, cond func() bool) {
	e.T.Helper()
	poll.Until(e.T, what, within, cond)
}

// Res resolves a resource name.
func (e *Env) Res(name string) client.Resource {
	e.T.Helper()
	r, err := e.C.ResourceFor(e.Ctx, name)
	if err != nil {
		e.T.Fatal(err)
	}
	return r
}

// Apply applies YAML documents in namespace default.
func (e *Env) Apply(y string) {
	e.T.Helper()
	docs, err := manifest.DecodeBytes([]byte(y))
	if err != nil {
		e.T.Fatal(err)
	}
	for _, d := range docs {
		var h struct{ APIVersion, Kind string }
		_ = json.Unmarshal(d.JSON, &h)
		r, err := e.C.ResourceForKind(e.Ctx, h.APIVersion, h.Kind)
		if err != nil {
			e.T.Fatal(err)
		}
		if _, _, err := e.C.Apply(e.Ctx, r, "default", d.JSON); err != nil {
			e.T.Fatalf("apply: %v", err)
		}
	}
}

// Get reads an object in namespace default (or a cluster-scoped one).
func (e *Env) Get(kind, name string) *object.Object {
	e.T.Helper()
	o, err := e.C.Get(e.Ctx, e.Res(kind), "default", name)
	if err != nil {
		e.T.Fatalf("get %s %s: %v", kind, name, err)
	}
	return o
}

// List lists objects in namespace default; it returns nil on error, so
// that it can be polled from any goroutine.
func (e *Env) List(kind, selector string) []*object.Object {
	l, err := e.C.List(e.Ctx, e.Res(kind), "default", client.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil
	}
	return l.Items
}

// Pods decodes the pods matching selector.
func (e *Env) Pods(selector string) []*kinds.Pod {
	var out []*kinds.Pod
	for _, o := range e.List("pods", selector) {
		if p, err := kinds.DecodePod(o); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Patch applies a merge patch.
func (e *Env) Patch(kind, name, patch string) *object.Object {
	e.T.Helper()
	o, err := e.C.Patch(e.Ctx, e.Res(kind), "default", name, []byte(patch))
	if err != nil {
		e.T.Fatalf("patch %s %s: %v", kind, name, err)
	}
	return o
}
