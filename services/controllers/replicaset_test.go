package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/controllers"
	"github.com/homeostat/homeostat/testenv/poll"
)

const rsYAML = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: c, command: [sleep, "1000"]}]}
`

func TestReplicaSetScalesAndCountsStatus(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(fmt.Sprintf(rsYAML, "web", 3))
	poll.Until(t, "3 pods", 10*time.Second, func() bool { return len(e.list("pods", "app=web")) == 3 })
	for _, p := range e.list("pods", "app=web") {
		if ref, ok := p.Metadata.ControllerOf(); !ok || ref.Name != "web" {
			t.Fatalf("pod %s not owned by the ReplicaSet: %+v", p.Metadata.Name, p.Metadata.OwnerReferences)
		}
	}
	stop := e.runPods("app=web")
	defer stop()
	poll.Until(t, "status ready 3", 10*time.Second, func() bool {
		var st kinds.ReplicaSetStatus
		_ = e.get("rs", "web").DecodeStatus(&st)
		return st.Replicas == 3 && st.FullyLabeledReplicas == 3 && st.ReadyReplicas == 3 && st.AvailableReplicas == 3 && st.ObservedGeneration == 1
	})
	e.patch("rs", "web", `{"spec":{"replicas":5}}`)
	poll.Until(t, "5 pods", 10*time.Second, func() bool { return len(activePods(e.list("pods", "app=web"))) == 5 })
	e.patch("rs", "web", `{"spec":{"replicas":1}}`)
	poll.Until(t, "1 pod", 10*time.Second, func() bool { return len(e.list("pods", "app=web")) == 1 })
	if n := e.list("pods", "app=web")[0].Metadata.Name; n != "web-0" {
		t.Fatalf("scale-down kept %s, want the pod in slot 0", n)
	}
	// A deleted pod is replaced.
	if _, err := e.c.Delete(e.ctx, e.res("pods"), "default", "web-0", clientDelete()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a replacement", 10*time.Second, func() bool {
		ps := e.list("pods", "app=web")
		return len(ps) == 1 && ps[0].Metadata.Name == "web-0"
	})
}

func TestReplicaSetAdoptsAndReleases(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(`apiVersion: v1
kind: Pod
metadata: {name: stray, labels: {app: adopt}}
spec: {containers: [{name: c, command: [x]}]}
`)
	// The stray pod runs: the controllers cache it lean, and adopting or
	// releasing it must leave its stored status whole.
	e.setPodStatus(e.get("pods", "stray"), kinds.PodRunning, true)
	status := e.get("pods", "stray").Status
	// The template has a label the selector does not ask for, which the
	// adopted pod lacks: it counts among the replicas, not the fully
	// labeled ones.
	e.apply(`apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: adopt}
spec:
  replicas: 2
  selector: {matchLabels: {app: adopt}}
  template:
    metadata: {labels: {app: adopt, tier: x}}
    spec: {containers: [{name: c, command: [sleep, "1000"]}]}
`)
	poll.Until(t, "the stray pod adopted and one more made", 10*time.Second, func() bool {
		ps := e.list("pods", "app=adopt")
		if len(ps) != 2 {
			return false
		}
		for _, p := range ps {
			if ref, ok := p.Metadata.ControllerOf(); !ok || ref.Name != "adopt" {
				return false
			}
		}
		return true
	})
	poll.Until(t, "status: 2 replicas, 1 fully labeled", 10*time.Second, func() bool {
		var st kinds.ReplicaSetStatus
		_ = e.get("rs", "adopt").DecodeStatus(&st)
		return st.Replicas == 2 && st.FullyLabeledReplicas == 1
	})
	if got := e.get("pods", "stray").Status; !object.SameJSON(got, status) {
		t.Fatalf("adopting the pod left its status %s, was %s", got, status)
	}
	// Relabelling a pod releases it; the ReplicaSet makes another.
	e.patch("pods", "stray", `{"metadata":{"labels":{"app":"gone"}}}`)
	poll.Until(t, "release and replacement", 10*time.Second, func() bool {
		p := e.get("pods", "stray")
		_, owned := p.Metadata.ControllerOf()
		return !owned && len(e.list("pods", "app=adopt")) == 2
	})
	if got := e.get("pods", "stray").Status; !object.SameJSON(got, status) {
		t.Fatalf("releasing the pod left its status %s, was %s", got, status)
	}
}

// Three controller processes reconcile one ReplicaSet while it is updated
// in a tight loop; a watch of its pods never sees more than desired.
func TestConcurrentReconcilesNeverDuplicatePods(t *testing.T) {
	e := newEnv(t)
	for range 3 {
		e.controllers()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods, err := e.conn.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := pods.Watch(ctx, bus.WatchOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	live, peak := map[string]bool{}, 0
	go func() {
		for ev := range ch {
			mu.Lock()
			switch ev.Type {
			case bus.Added, bus.Modified:
				live[ev.Key] = true
			case bus.Deleted:
				delete(live, ev.Key)
			}
			peak = max(peak, len(live))
			mu.Unlock()
		}
	}()
	const want = 5
	e.apply(fmt.Sprintf(rsYAML, "hot", want))
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		e.patch("rs", "hot", fmt.Sprintf(`{"metadata":{"annotations":{"bump":"%d"}}}`, i))
	}
	poll.Until(t, "5 pods", 10*time.Second, func() bool { return len(e.list("pods", "app=hot")) == want })
	mu.Lock()
	defer mu.Unlock()
	if peak > want {
		t.Fatalf("a watch saw %d pods at once; desired %d", peak, want)
	}
	if peak != want {
		t.Fatalf("the watch peaked at %d pods; want exactly %d", peak, want)
	}
}

// A reconcile working from an earlier spec (a lost acknowledgement, a
// stalled connection, another process) must not bring back pods a
// scale-down removed once the ReplicaSet says it is settled: its slots are
// fenced, and the bound the Deployment counts is the pods it has.
func TestScaleDownFencesLateCreates(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.apply(fmt.Sprintf(rsYAML, "fence", 3))
	settledAt := func(gen int64, slots string) func() bool {
		return func() bool {
			rs := e.get("rs", "fence")
			return rs.Metadata.Generation == gen && rs.Metadata.Annotations[controllers.AnnotationSettled] == fmt.Sprint(gen) &&
				rs.Metadata.Annotations[controllers.AnnotationSlots] == slots
		}
	}
	poll.Until(t, "3 pods, settled at generation 1", 10*time.Second, settledAt(1, "3"))
	stale := e.get("rs", "fence")
	e.patch("rs", "fence", `{"spec":{"replicas":1}}`)
	poll.Until(t, "settled at generation 2 with one slot", 10*time.Second, settledAt(2, "1"))
	poll.Until(t, "1 pod", 10*time.Second, func() bool { return len(e.list("pods", "app=fence")) == 1 })

	pods, err := e.conn.Store(e.ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	late := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "fence-2", Namespace: "default",
		Labels:          map[string]string{"app": "fence"},
		OwnerReferences: []object.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "fence", UID: stale.Metadata.UID, Controller: &yes}}}}
	_, errs := pods.CreateMany(e.ctx, []*object.Object{late}, bus.CreateOptions{Authority: &bus.Authority{Owner: stale.Metadata.UID, Generation: stale.Metadata.Generation}})
	if !errors.Is(errs[0], bus.ErrFenced) {
		t.Fatalf("a create on the authority of generation 1 after the scale-down to 1: got %v, want ErrFenced", errs[0])
	}
	// Scaled up again, the slot is the ReplicaSet's to fill.
	e.patch("rs", "fence", `{"spec":{"replicas":3}}`)
	poll.Until(t, "3 pods again, settled at generation 3", 10*time.Second, func() bool {
		return settledAt(3, "3")() && len(e.list("pods", "app=fence")) == 3
	})
}
