package nodeagent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/services/nodeagent"
	"github.com/homeostat/homeostat/testenv"
	"github.com/homeostat/homeostat/testenv/poll"
)

// agentRun is one agent running in the test: done holds what Run returned.
type agentRun struct {
	done chan error
	stop func()
}

// startAgent runs an agent for node on conn until the test ends (or stop).
// A long Grace makes any wait for a heartbeat to lapse time the test out.
// Each identity reports its own address and label, so that whatever an
// agent writes to the node or its pods shows whose write it was.
func startAgent(t *testing.T, conn *bus.Conn, node, identity string) *agentRun {
	t.Helper()
	addr := map[string]string{"a": "127.0.0.10", "b": "127.0.0.11"}[identity]
	a, err := nodeagent.New(nodeagent.Config{Bus: conn, NodeName: node, Identity: identity, Runtime: nodeagent.NewSimulated(0),
		Capacity: kinds.ResourceList{"cpu": "4", "memory": "8Gi", "pods": "20"}, Address: addr,
		Labels: map[string]string{"test/agent": identity}, HeartbeatEvery: 300 * time.Millisecond, Grace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &agentRun{done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Errorf("agent %s of node %s did not stop within 30s of its context ending", identity, node)
		}
	}
	t.Cleanup(r.stop)
	return r
}

// returned reports whether the agent's Run has returned, and with what.
func (r *agentRun) returned() (error, bool) {
	select {
	case err := <-r.done:
		r.done <- err // keep it for the next look
		return err, true
	default:
		return nil, false
	}
}

func podOn(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", labels: {app: held}}\n" +
		"spec: {nodeSelector: {kubernetes.io/hostname: n1}, containers: [{name: c, command: [x]}]}\n"
}

func runningOn(e *testenv.Env, name, node string) bool {
	for _, p := range e.Pods("app=held") {
		if p.Metadata.Name == name {
			return p.Spec.NodeName == node && p.Status.Phase == kinds.PodRunning && p.Ready()
		}
	}
	return false
}

// An agent refuses a node name that another live agent holds, promptly and
// without touching the node or its pods; the holder, restarted after a
// crash under its own identity, takes the name back at once instead of
// waiting for its old heartbeat to lapse.
func TestNodeNameHeldByAnotherLiveAgent(t *testing.T) {
	e := testenv.New(t)
	e.Scheduler("s")
	ctx := context.Background()
	leases, err := e.Conn.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lease := func() *bus.Lease {
		l, err := leases.Get(ctx, "node.n1")
		if err != nil {
			return nil
		}
		return l
	}

	connA := e.Client()
	a := startAgent(t, connA, "n1", "a")
	e.Apply(podOn("p1"))
	e.Eventually("p1 running on n1", 15*time.Second, func() bool { return runningOn(e, "p1", "n1") })
	node := e.Get("nodes", "n1")
	pod := e.Get("pods", "p1")

	// B wants the same node name.
	b := startAgent(t, e.Client(), "n1", "b")
	start := time.Now()
	poll.Until(t, "agent b to refuse node n1", 10*time.Second, func() bool { _, ok := b.returned(); return ok })
	berr, _ := b.returned()
	t.Logf("agent b refused n1 after %s: %v", time.Since(start).Round(time.Millisecond), berr)
	if !errors.Is(berr, nodeagent.ErrNodeTaken) {
		t.Fatalf("agent b returned %v; want an error that is ErrNodeTaken", berr)
	}
	if got := e.Get("nodes", "n1"); got.Metadata.ResourceVersion != node.Metadata.ResourceVersion || got.Metadata.Labels["test/agent"] != "a" {
		t.Errorf("the refused agent changed node n1: revision %s -> %s, labels %v", node.Metadata.ResourceVersion,
			got.Metadata.ResourceVersion, got.Metadata.Labels)
	}
	if got := e.Get("pods", "p1"); got.Metadata.ResourceVersion != pod.Metadata.ResourceVersion {
		t.Errorf("the refused agent changed pod p1: revision %s -> %s", pod.Metadata.ResourceVersion, got.Metadata.ResourceVersion)
	}
	// A keeps running: it still renews the node's heartbeat as itself.
	l := lease()
	if l == nil || l.Holder != "a" {
		t.Fatalf("node n1's heartbeat after b's refusal: %+v; want held by a", l)
	}
	poll.Until(t, "a to renew its heartbeat again", 10*time.Second, func() bool {
		n := lease()
		return n != nil && n.Holder == "a" && n.Revision > l.Revision
	})
	if err, ok := a.returned(); ok {
		t.Fatalf("agent a stopped: %v", err)
	}

	// A crashes: its connection drops with nothing released, its heartbeat
	// still live for 30s.
	connA.Abandon()
	before := lease()
	if before == nil || before.Holder != "a" {
		t.Fatalf("node n1's heartbeat after a's crash: %+v; want still held by a", before)
	}
	a2 := startAgent(t, e.Client(), "n1", "a")
	start = time.Now()
	poll.Until(t, "the restarted a to take its heartbeat back", 10*time.Second, func() bool {
		if _, ok := a2.returned(); ok {
			return true
		}
		n := lease()
		return n != nil && n.Holder == "a" && n.Revision > before.Revision
	})
	if err, ok := a2.returned(); ok {
		t.Fatalf("the restarted agent a returned %v; want it running (ErrNodeTaken: it waited on its own heartbeat)", err)
	}
	t.Logf("the restarted agent a took n1 back after %s (heartbeat TTL 30s)", time.Since(start).Round(time.Millisecond))
	// It runs the node: a new pod lands and runs there; only it can run it.
	e.Apply(podOn("p2"))
	e.Eventually("p2 running on n1 under the restarted agent", 15*time.Second, func() bool { return runningOn(e, "p2", "n1") })
	if err, ok := a2.returned(); ok {
		t.Fatalf("the restarted agent a stopped: %v", err)
	}
}

// unavailableWriter fails its first writes (status writes, removals) as a
// relay that is not running would, then writes to the store.
type unavailableWriter struct {
	pods         *bus.Store
	fails        atomic.Int32
	removalFails atomic.Int32
}

func (w *unavailableWriter) UpdateStatus(ctx context.Context, pod, current *object.Object) (*object.Object, error) {
	if w.fails.Add(-1) >= 0 {
		return nil, fmt.Errorf("no relay: %w", bus.ErrUnavailable)
	}
	return w.pods.Update(ctx, pod, bus.UpdateOptions{Current: current})
}

func (w *unavailableWriter) Remove(ctx context.Context, key, uid string) error {
	if w.removalFails.Add(-1) >= 0 {
		return fmt.Errorf("no relay: %w", bus.ErrUnavailable)
	}
	zero := int64(0)
	_, _, err := w.pods.Delete(ctx, key, bus.DeleteOptions{UID: uid, GracePeriodSeconds: &zero})
	return err
}

// runWithWriter runs a scheduler and the agent of node n1, writing its
// pods through an unavailableWriter (answering at first), until the test
// ends.
func runWithWriter(t *testing.T, e *testenv.Env) *unavailableWriter {
	t.Helper()
	e.Scheduler("s")
	pods, err := e.Conn.Store(context.Background(), bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	w := &unavailableWriter{pods: pods}
	a, err := nodeagent.New(nodeagent.Config{Bus: e.Conn, Pods: w, NodeName: "n1", Runtime: nodeagent.NewSimulated(0),
		Capacity: kinds.ResourceList{"cpu": "4", "memory": "8Gi", "pods": "20"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// A pod's status waits out a writer that does not answer, however long,
// rather than being given up on: the runtime reports Running only once.
func TestStatusOutlastsAnUnavailableWriter(t *testing.T) {
	e := testenv.New(t)
	w := runWithWriter(t, e)
	w.fails.Store(7)
	e.Apply(podOn("p"))
	e.Eventually("the pod Running once the writer answers", 30*time.Second, func() bool { return runningOn(e, "p", "n1") })
	if w.fails.Load() >= 0 {
		t.Fatalf("the writer was asked %d times fewer than it failed", w.fails.Load()+1)
	}
}

// A pod deleted while its writer does not answer is removed once the
// writer answers: no later change would tell the agent of a pod left
// Terminating.
func TestRemovalOutlastsAnUnavailableWriter(t *testing.T) {
	e := testenv.New(t)
	w := runWithWriter(t, e)
	e.Apply(podOn("p"))
	e.Eventually("the pod Running", 30*time.Second, func() bool { return runningOn(e, "p", "n1") })
	w.removalFails.Store(3)
	if _, err := e.C.Delete(e.Ctx, e.Res("pods"), "default", "p", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the pod removed once the writer answers", 30*time.Second, func() bool {
		_, err := w.pods.Get(e.Ctx, "default.p")
		return errors.Is(err, bus.ErrNotFound)
	})
	if n := w.removalFails.Load(); n >= 0 {
		t.Fatalf("the writer was asked to remove the pod %d times fewer than it failed", n+1)
	}
}
