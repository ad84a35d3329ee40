package controllers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/controllers"
	"github.com/homeostat/homeostat/testenv"
)

// env wraps the shared test environment with the helpers these tests use.
type env struct {
	*testenv.Env
	t    *testing.T
	conn *bus.Conn
	c    *client.Client
	ctx  context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := testenv.New(t)
	return &env{Env: e, t: t, conn: e.Conn, c: e.C, ctx: e.Ctx}
}

// controllers starts another controller process (its own connection).
func (e *env) controllers(mutate ...func(*controllers.Config)) { e.Controllers(mutate...) }

func (e *env) res(name string) client.Resource           { return e.Res(name) }
func (e *env) apply(y string)                            { e.Apply(y) }
func (e *env) get(kind, name string) *object.Object      { return e.Get(kind, name) }
func (e *env) list(kind, sel string) []*object.Object    { return e.List(kind, sel) }
func (e *env) patch(kind, name, p string) *object.Object { return e.Patch(kind, name, p) }

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
	if phase == kinds.PodFailed || phase == kinds.PodSucceeded {
		code := int32(0)
		if phase == kinds.PodFailed {
			code = 1
		}
		st.ContainerStatuses = []kinds.ContainerStatus{{Name: "c", State: kinds.ContainerState{
			Terminated: &kinds.StateTerminated{ExitCode: code, FinishedAt: time.Now().UTC()}}}}
	}
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
