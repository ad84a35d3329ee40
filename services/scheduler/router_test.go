package scheduler_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/testenv"
)

// indexed follows one node's entries in the node pod index: the keys it
// holds now.
func indexed(e *testenv.Env, node string) func() []string {
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
	keys := map[string]bool{}
	go func() {
		for ev := range ch {
			mu.Lock()
			switch ev.Type {
			case bus.Added, bus.Modified:
				keys[ev.Key] = true
			case bus.Deleted:
				delete(keys, ev.Key)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for k := range keys {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
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
