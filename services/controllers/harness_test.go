package controllers_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/manifest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/services/controllers"
	"github.com/homeostat/homeostat/services/controllers/reconcile"
)

// env is an API and the controllers over one embedded NATS server.
type env struct {
	t    *testing.T
	conn *bus.Conn
	c    *client.Client
	ctx  context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	conn := bustest.Conn(t)
	e := &env{t: t, conn: conn, ctx: context.Background()}
	e.c = client.New(startAPI(t, conn), nil)
	return e
}

func startAPI(t *testing.T, conn *bus.Conn) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := api.New(api.Config{Bus: conn, Listener: ln, CompactEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + ln.Addr().String()
	eventually(t, "api ready", 10*time.Second, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// controllers starts the controllers on conn (a client of the env's server).
func (e *env) controllers(conn *bus.Conn, mutate ...func(*controllers.Config)) {
	e.t.Helper()
	cfg := controllers.Config{Bus: conn, Backoff: reconcile.Backoff{Initial: 5 * time.Millisecond, Max: 500 * time.Millisecond, Multiplier: 2}}
	for _, m := range mutate {
		m(&cfg)
	}
	svc, err := controllers.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := svc.Setup(ctx); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("controllers: %v", err)
		}
	})
	select {
	case <-svc.Ready():
	case err := <-done:
		e.t.Fatalf("controllers ended: %v", err)
	case <-time.After(15 * time.Second):
		e.t.Fatal("controllers not ready")
	}
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) res(name string) client.Resource {
	e.t.Helper()
	r, err := e.c.ResourceFor(e.ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// apply applies YAML documents.
func (e *env) apply(y string) {
	e.t.Helper()
	docs, err := manifest.DecodeBytes([]byte(y))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range docs {
		var h struct {
			APIVersion, Kind string
		}
		_ = json.Unmarshal(d.JSON, &h)
		r, err := e.c.ResourceForKind(e.ctx, h.APIVersion, h.Kind)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, _, err := e.c.Apply(e.ctx, r, "default", d.JSON); err != nil {
			e.t.Fatalf("apply: %v", err)
		}
	}
}

func (e *env) get(kind, name string) *object.Object {
	e.t.Helper()
	o, err := e.c.Get(e.ctx, e.res(kind), "default", name)
	if err != nil {
		e.t.Fatalf("get %s %s: %v", kind, name, err)
	}
	return o
}

func (e *env) list(kind, selector string) []*object.Object {
	e.t.Helper()
	l, err := e.c.List(e.ctx, e.res(kind), "default", client.ListOptions{LabelSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

func (e *env) patch(kind, name, patch string) *object.Object {
	e.t.Helper()
	o, err := e.c.Patch(e.ctx, e.res(kind), "default", name, []byte(patch))
	if err != nil {
		e.t.Fatalf("patch %s %s: %v", kind, name, err)
	}
	return o
}

// setPodStatus plays the node agent: it writes a pod's phase and readiness.
func (e *env) setPodStatus(p *object.Object, phase string, ready bool) {
	e.t.Helper()
	st := kinds.PodStatus{Phase: phase}
	rs := object.ConditionFalse
	if ready {
		rs = object.ConditionTrue
	}
	now := time.Now().Add(-time.Hour)
	st.Conditions = []object.Condition{{Type: kinds.PodReady, Status: rs, LastTransitionTime: now}}
	b, _ := json.Marshal(map[string]any{"status": st})
	if err := e.c.Do(e.ctx, http.MethodPatch, e.res("pods").Path("default", p.Metadata.Name)+"/status", b, "application/merge-patch+json", nil); err != nil && !strings.Contains(err.Error(), "not found") {
		e.t.Fatalf("pod status: %v", err)
	}
}

// runPods marks every pending pod matching selector Running and Ready,
// until stop is called: a stand-in for node agents.
func (e *env) runPods(selector string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			l, err := e.c.List(ctx, e.res("pods"), "default", client.ListOptions{LabelSelector: selector})
			if err == nil {
				for _, p := range l.Items {
					var st kinds.PodStatus
					_ = p.DecodeStatus(&st)
					if st.Phase == "" && !p.Metadata.Deleting() {
						e.setPodStatus(p, kinds.PodRunning, true)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func activePods(items []*object.Object) []*object.Object {
	var out []*object.Object
	for _, p := range items {
		if !p.Metadata.Deleting() {
			out = append(out, p)
		}
	}
	return out
}

func clientDelete() client.DeleteOptions { return client.DeleteOptions{} }
