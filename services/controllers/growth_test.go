package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

// growthEnv is a Deployment controller over a real bus, driven pass by
// pass, so that a test can hold one reconcile's view while another acts.
type growthEnv struct {
	t      *testing.T
	ctx    context.Context
	c      *deployments
	deploy *bus.Store
}

func newGrowthEnv(t *testing.T) *growthEnv {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	conn := bustest.Conn(t)
	rsStore, err := conn.Store(ctx, bus.StoreSpec{Resource: "replicasets.apps", Kind: "ReplicaSet", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	dStore, err := conn.Store(ctx, bus.StoreSpec{Resource: "deployments.apps", Kind: "Deployment", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	rs := reconcile.NewInformer(reconcile.Kind{Kind: "ReplicaSet", APIVersion: "apps/v1", Resource: "replicasets.apps", Namespaced: true},
		rsStore, slog.New(slog.DiscardHandler))
	rs.AddIndex(byNamespace, namespaceIndex)
	go rs.Run(ctx)
	poll.Until(t, "the ReplicaSet cache synced", 10*time.Second, rs.Synced)
	ev, err := reconcile.NewRecorder(ctx, conn, "deployment-controller", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return &growthEnv{t: t, ctx: ctx, c: &deployments{rs: rs, events: ev, now: time.Now}, deploy: dStore}
}

// write stores version v of the Deployment (4 replicas, surge 1, none
// unavailable) over prev, or creates it.
func (e *growthEnv) write(prev *object.Object, v int) *object.Object {
	e.t.Helper()
	spec := fmt.Sprintf(`{"replicas":4,"selector":{"matchLabels":{"app":"g"}},
"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":0}},
"template":{"metadata":{"labels":{"app":"g"}},"spec":{"containers":[{"name":"c","image":"v%d"}]}}}`, v)
	var out *object.Object
	var err error
	if prev == nil {
		out, err = e.deploy.Create(e.ctx, &object.Object{APIVersion: "apps/v1", Kind: "Deployment",
			Metadata: object.Meta{Name: "g", Namespace: "default"}, Spec: []byte(spec)})
	} else {
		n := prev.Clone()
		n.Spec = []byte(spec)
		out, err = e.deploy.Update(e.ctx, n, bus.UpdateOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// view is what one reconcile of d decides from, taken now.
func (e *growthEnv) view(d *object.Object) *deploymentState {
	e.t.Helper()
	s, err := e.c.loadToGrow(e.ctx, d)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// pods is how many pods the Deployment's ReplicaSets may have, by name.
func (e *growthEnv) pods(d *object.Object) (map[string]int32, int32) {
	e.t.Helper()
	s := e.view(d)
	out, total := map[string]int32{}, int32(0)
	for _, r := range append(append([]*rsView(nil), s.old...), s.newRS) {
		if r != nil {
			out[r.obj.Metadata.Name] = r.mayHave()
			total += r.mayHave()
		}
	}
	return out, total
}

// Two reconciles of one Deployment at once, of consecutive generations:
// the older grows its ReplicaSet while the newer creates and grows the
// next, each on counts the other's write changes. Each would fit the bound
// alone; the growth guard lets only the first to land through.
func TestConcurrentGrowthsKeepTheSurgeBound(t *testing.T) {
	e := newGrowthEnv(t)
	d1 := e.write(nil, 1)
	if err := e.c.rollout(e.ctx, e.view(d1)); err != nil {
		t.Fatal(err)
	}
	d2 := e.write(d1, 2)
	if err := e.c.rollout(e.ctx, e.view(d2)); err != nil {
		t.Fatal(err)
	}
	// The first ReplicaSet has since shed a pod (as it does once the new
	// one's first pod is available), settled: room for one more.
	s := e.view(d2)
	first := s.old[0]
	spec := first.spec
	three := int32(3)
	spec.Replicas = &three
	n := first.obj.Clone()
	if err := n.SetSpec(spec); err != nil {
		t.Fatal(err)
	}
	n.Metadata.Annotations[AnnotationSettled] = fmt.Sprint(first.obj.Metadata.Generation + 1)
	if _, err := e.c.rs.Store().Update(e.ctx, n, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, total := e.pods(d2); total != 4 {
		t.Fatalf("set-up: %d pods may exist, want 4", total)
	}

	older := e.view(d2) // would grow the second ReplicaSet from 1 to 2
	d3 := e.write(d2, 3)
	if err := e.c.rollout(e.ctx, e.view(d3)); err != nil { // creates the third, grows it to 1
		t.Fatal(err)
	}
	if err := e.c.rollout(e.ctx, older); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("the older reconcile's growth, decided before the newer one's: got %v, want ErrConflict", err)
	}
	sizes, total := e.pods(d3)
	if total > 5 {
		t.Fatalf("%d pods may exist (%v), bound 5", total, sizes)
	}
	// Decided again from fresh counts, the older generation finds no room.
	if err := e.c.rollout(e.ctx, e.view(d2)); err != nil {
		t.Fatal(err)
	}
	if sizes, total = e.pods(d3); total > 5 {
		t.Fatalf("after the older reconcile ran again, %d pods may exist (%v), bound 5", total, sizes)
	}
}
