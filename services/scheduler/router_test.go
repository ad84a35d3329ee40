package scheduler_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv"
)

// indexed follows one node's entries in the node pod index: the keys it
// holds now.
func indexed(e *testenv.Env, node string) func() []string {
	e.T.Helper()
	held := entries(e, node)
	return func() []string {
		return slices.Sorted(maps.Keys(held()))
	}
}

// entries follows one node's entries in the node pod index: the pods it
// holds now, by key.
func entries(e *testenv.Env, node string) func() map[string]*object.Object {
	e.T.Helper()
	index, err := e.Client().NodePods(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	ch, err := index.Watch(e.Ctx, node)
	if err != nil {
		e.T.Fatal(err)
	}
	var mu sync.Mutex
	pods := map[string]*object.Object{}
	go func() {
		for ev := range ch {
			mu.Lock()
			switch ev.Type {
			case bus.Added, bus.Modified:
				pods[ev.Key] = ev.Object
			case bus.Deleted:
				delete(pods, ev.Key)
			}
			mu.Unlock()
		}
	}()
	return func() map[string]*object.Object {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(pods)
	}
}

func node(name string, derived bool) string {
	annotations := "{}"
	if derived {
		annotations = fmt.Sprintf("{%q: %q}", kinds.AnnotationPodIndex, kinds.PodIndexDerived)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata: {name: %s, annotations: %s}\n", name, annotations)
}

func boundPod(name, node string) string {
	return pod(name, "100m", "nodeName: "+node)
}

// TestIndexLeavesOutNodesThatDerivePods: the scheduler writes index entries
// for the pods of a node whose agent reads the index, none for a node
// whose agent derives its pods from the store, and the current pods of a
// node that turns to the index, without those that left it meanwhile.
func TestIndexLeavesOutNodesThatDerivePods(t *testing.T) {
	e := testenv.New(t)
	e.Apply(node("idx", false))
	e.Apply(node("drv", true))
	e.Apply(boundPod("p1", "idx"))
	e.Apply(boundPod("p2", "drv"))
	e.Scheduler("s1") // leads once its caches hold the above
	idx, drv := indexed(e, "idx"), indexed(e, "drv")
	e.Eventually("idx's pod in the index", 10*time.Second, func() bool {
		return fmt.Sprint(idx()) == "[default.p1]"
	})
	// What is routed after another change was written before it.
	e.Apply(boundPod("p3", "drv"))
	e.Apply(boundPod("p4", "idx"))
	e.Eventually("idx's later pod in the index", 10*time.Second, func() bool {
		return fmt.Sprint(idx()) == "[default.p1 default.p4]"
	})
	if got := drv(); len(got) != 0 {
		t.Fatalf("the node that derives its pods has index entries %v", got)
	}
	if _, err := e.C.Delete(e.Ctx, e.Res("pods"), "default", "p2", client.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("p2 gone", 10*time.Second, func() bool { return len(e.List("pods", "")) == 3 })
	if _, err := e.C.Patch(e.Ctx, e.Res("nodes"), "", "drv",
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, kinds.AnnotationPodIndex)); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the node's current pods in the index once it reads it", 10*time.Second, func() bool {
		return fmt.Sprint(drv()) == "[default.p3]"
	})
}

// TestIndexEntriesHoldWholePods: of a pod bound to a node that derives its
// pods, the scheduler keeps the phase of its status alone; should the node
// turn to the index, the pod's entry holds it whole as stored, since the
// node's agent writes its status over the entry.
func TestIndexEntriesHoldWholePods(t *testing.T) {
	e := testenv.New(t)
	e.Apply(node("idx", false))
	e.Apply(node("drv", true))
	e.Apply(boundPod("p1", "drv"))
	s, _ := e.Scheduler("s1")
	e.Eventually("the scheduler's caches synced", 10*time.Second, func() bool {
		select {
		case <-s.Ready():
			return true
		default:
			return false
		}
	})
	st := kinds.PodStatus{Phase: kinds.PodRunning, PodIP: "10.0.0.1",
		Conditions: []object.Condition{{Type: kinds.PodReady, Status: object.ConditionTrue}}}
	run := func(name string) {
		t.Helper()
		running := e.Get("pods", name).Clone()
		if err := running.SetStatus(st); err != nil {
			t.Fatal(err)
		}
		if _, err := e.C.Update(e.Ctx, e.Res("pods"), running, true); err != nil {
			t.Fatal(err)
		}
	}
	// Written once the scheduler knows drv, p1's status is kept lean.
	run("p1")
	idx, drv := indexed(e, "idx"), entries(e, "drv")
	e.Eventually("p1 kept with its phase alone", 10*time.Second, func() bool {
		o, ok := s.CachedPod("default.p1")
		return ok && kinds.IsPhaseOnly(o)
	})
	e.Apply(boundPod("p2", "idx"))
	e.Eventually("p2 in idx's index", 10*time.Second, func() bool { return fmt.Sprint(idx()) == "[default.p2]" })
	run("p2")
	e.Eventually("p2, on a node that reads the index, kept whole", 10*time.Second, func() bool {
		o, ok := s.CachedPod("default.p2")
		return ok && o.Metadata.ResourceVersion == e.Get("pods", "p2").Metadata.ResourceVersion && !kinds.IsPhaseOnly(o)
	})
	if _, err := e.C.Patch(e.Ctx, e.Res("nodes"), "", "drv",
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, kinds.AnnotationPodIndex)); err != nil {
		t.Fatal(err)
	}
	var entry *object.Object
	e.Eventually("p1 in drv's index once it reads it", 10*time.Second, func() bool {
		entry = drv()["default.p1"]
		return entry != nil
	})
	got, err := kinds.DecodePod(entry)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.PodIP != st.PodIP || !got.Ready() || got.Status.Phase != kinds.PodRunning {
		t.Fatalf("p1's entry holds status %s, want the stored one (IP %s, Ready)", entry.Status, st.PodIP)
	}
}
