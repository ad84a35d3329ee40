package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

// The bench counts a node as settled once it is Ready and the controllers
// have announced it; events of other reasons do not count, and no node is
// counted taken on while any is not Ready.
func TestNodesSettled(t *testing.T) {
	ctx := context.Background()
	conn := bustest.Conn(t)
	nodes, err := conn.Store(ctx, bus.StoreSpec{Resource: "nodes", Kind: "Node"})
	if err != nil {
		t.Fatal(err)
	}
	events, err := conn.Store(ctx, reconcile.EventKind.StoreSpec())
	if err != nil {
		t.Fatal(err)
	}
	node := func(name, ready string) {
		t.Helper()
		o := &object.Object{APIVersion: "v1", Kind: "Node", Metadata: object.Meta{Name: name}}
		if err := o.SetStatus(kinds.NodeStatus{Conditions: []object.Condition{{Type: "Ready", Status: ready}}}); err != nil {
			t.Fatal(err)
		}
		if cur, err := nodes.Get(ctx, name); err == nil {
			o.Metadata.ResourceVersion = cur.Metadata.ResourceVersion
			_, err = nodes.Update(ctx, o, bus.UpdateOptions{Current: cur})
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := nodes.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	event := func(n int, reason, about string) {
		t.Helper()
		o := &object.Object{APIVersion: "v1", Kind: "Event", Metadata: object.Meta{Name: fmt.Sprintf("e%d", n), Namespace: "default"}}
		if err := kinds.SetEvent(o, kinds.Event{Reason: reason, InvolvedObject: kinds.ObjectReference{Kind: "Node", Name: about}}); err != nil {
			t.Fatal(err)
		}
		if _, err := events.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	check := func(wantReady, wantTaken int) {
		t.Helper()
		if ready, taken := nodesSettled(ctx, nodes, events); ready != wantReady || taken != wantTaken {
			t.Fatalf("settled: %d Ready and %d taken on, want %d and %d", ready, taken, wantReady, wantTaken)
		}
	}
	node("a", "True")
	node("b", "Unknown")
	event(1, "RegisteredNode", "a")
	event(2, "RegisteredNode", "b")
	check(1, 0)
	node("b", "True")
	check(2, 2)
	event(3, "NodeNotReady", "c")
	event(4, "RegisteredNode", "a")
	node("c", "True")
	check(3, 2)
}

// The bench's watch of every pod holds a large buffer; it must end with
// the run that started it, not live on into the next runs of the process.
func TestPodWatchEndsWithItsRun(t *testing.T) {
	conn := bustest.Conn(t)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchPods(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	poll.Receive(t, "the pod watch to end with its context", 10*time.Second, w.done)
}

// lateCounts is the store's count of writes, with one pod write more than
// it holds until its second reading, when that write is made: the store
// took a write whose writer has not yet read its answer.
type lateCounts struct {
	t     *testing.T
	conn  *bus.Conn
	pods  *bus.Store
	reads int
	// never makes the write: the store stays one ahead.
	never bool
}

func (l *lateCounts) Writes(ctx context.Context) (map[string]uint64, error) {
	l.reads++
	if l.reads == 2 && !l.never {
		o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "late", Namespace: "default"}}
		if _, err := l.pods.Create(ctx, o); err != nil {
			l.t.Error(err)
		}
	}
	counts, err := l.conn.Writes(ctx)
	if l.reads < 2 || l.never {
		counts[podsStream]++
	}
	return counts, err
}

// The bench reads the writers' counts once they hold every pod write the
// store took, and the store's after them.
func TestWorkSettledWaitsForPodWritesCounted(t *testing.T) {
	ctx := context.Background()
	conn := bustest.Conn(t)
	pods, err := conn.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	before, err := conn.Writes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	workBefore := components{}.work(ctx)
	counts := &lateCounts{t: t, conn: conn, pods: pods}
	work, after, short, err := workSettled(ctx, components{}, counts, workBefore, before, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if short != 0 {
		t.Errorf("%v pod writes said uncounted, want none", short)
	}
	if counts.reads != 3 {
		t.Errorf("the store's counts read %d times, want 3: twice before the write was counted, once after", counts.reads)
	}
	if got := work[len(work)-1].Writes[podsStream]; got != 1 {
		t.Errorf("this process counted %v pod writes, want 1", got)
	}
	if got := after[podsStream] - before[podsStream]; got != 1 {
		t.Errorf("the store took %d pod writes, want 1", got)
	}
}

// A write whose answer is never read is never counted: the bench stops
// waiting for it after the time it is given, and says it is missing.
func TestWorkSettledGivesUp(t *testing.T) {
	ctx := context.Background()
	conn := bustest.Conn(t)
	before, err := conn.Writes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := &lateCounts{t: t, conn: conn, never: true}
	start := time.Now()
	_, _, short, err := workSettled(ctx, components{}, counts, components{}.work(ctx), before, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if short != 1 {
		t.Errorf("%v pod writes said uncounted, want 1", short)
	}
	if took := time.Since(start); took < 200*time.Millisecond || counts.reads < 2 {
		t.Errorf("gave up after %s and %d readings, want the whole wait and more than one reading", took, counts.reads)
	}
}

// How many of the pod writes the store took the writers between them did
// not count; a writer whose metrics could not be read counts none.
func TestPodWritesUncounted(t *testing.T) {
	before := map[string]uint64{podsStream: 10, "leases": 4}
	after := map[string]uint64{podsStream: 16, "leases": 9}
	for _, c := range []struct {
		doc  string
		work []Work
		want float64
	}{
		{"split between writers", []Work{{Writes: map[string]float64{podsStream: 2}}, {Writes: map[string]float64{podsStream: 4, "leases": 1}}}, 0},
		{"one missing", []Work{{Writes: map[string]float64{podsStream: 2}}, {Writes: map[string]float64{podsStream: 3, "leases": 5}}}, 1},
		{"metrics unread", []Work{{Writes: map[string]float64{podsStream: 2}}, {}}, 4},
		{"more counted than stored", []Work{{Writes: map[string]float64{podsStream: 7}}}, -1},
		{"no writer", nil, 6},
	} {
		if got := podWritesUncounted(c.work, before, after); got != c.want {
			t.Errorf("%s: uncounted = %v, want %v", c.doc, got, c.want)
		}
	}
}
