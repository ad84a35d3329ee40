package nodeagent

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// scriptedIndex is a PodIndex whose watches each list a set of pods, then
// end, but for the last, which stays open; each after the first begins
// once again is closed.
type scriptedIndex struct {
	mu       sync.Mutex
	listings [][]*object.Object
	watches  int
	again    chan struct{}
}

func (x *scriptedIndex) Watch(ctx context.Context, _ string) (<-chan bus.Event, error) {
	if x.watched() > 0 {
		select {
		case <-x.again:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	x.mu.Lock()
	i := min(x.watches, len(x.listings)-1)
	last := x.watches >= len(x.listings)-1
	x.watches++
	x.mu.Unlock()
	ch := make(chan bus.Event, len(x.listings[i])+1)
	for _, o := range x.listings[i] {
		ch <- bus.Event{Type: bus.Added, Key: o.Key(), Object: o}
	}
	ch <- bus.Event{Type: bus.Synced}
	if !last {
		close(ch)
		return ch, nil
	}
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

func (x *scriptedIndex) watched() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.watches
}

func boundPodObject(name string) *object.Object {
	return &object.Object{APIVersion: "v1", Kind: "Pod",
		Metadata: object.Meta{Name: name, Namespace: "default", UID: "uid-" + name, ResourceVersion: "1"},
		Spec:     []byte(`{"containers":[{"name":"c","command":["sleep","infinity"]}],"nodeName":"n1"}`)}
}

// TestRelistStopsPodsGoneMeanwhile: a node whose index derives its pods
// from the store, and so makes no resync reads, stops, when its watch
// begins again, the pods its new listing leaves out, and only those.
func TestRelistStopsPodsGoneMeanwhile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p1, p2 := boundPodObject("p1"), boundPodObject("p2")
	idx := &scriptedIndex{listings: [][]*object.Object{{p1, p2}, {p1}}, again: make(chan struct{})}
	a := &Agent{cfg: Config{NodeName: "n1", Address: "127.0.0.1", Runtime: NewSimulated(0), DerivesPods: true},
		log: slog.Default(), write: &countingWriter{}, workers: map[string]*podWorker{}, index: idx}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.watch(ctx, nil) }()
	worker := func(key string) *podWorker {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.workers[key]
	}
	poll.Until(t, "both pods' workers", 10*time.Second, func() bool {
		return worker("default.p1") != nil && worker("default.p2") != nil
	})
	first := worker("default.p1")
	close(idx.again)
	poll.Until(t, "the second listing read and p2's worker gone", 10*time.Second, func() bool {
		return idx.watched() >= 2 && worker("default.p2") == nil
	})
	poll.Until(t, "p1's worker idle", 10*time.Second, first.idle)
	if w := worker("default.p1"); w != first || w.isEnded() {
		t.Fatal("p1, listed both times, did not keep its running worker")
	}
	if a.cfg.Resync = time.Millisecond; !resyncReturns(ctx, a) {
		t.Fatal("a node whose index derives its pods resyncs them by reading the store")
	}
	cancel()
	within(t, "the watch's end", done)
}

// resyncReturns says whether the agent's resync returns at once, with ctx
// still live.
func resyncReturns(ctx context.Context, a *Agent) bool {
	ended := make(chan struct{})
	go func() { defer close(ended); a.resync(ctx) }()
	select {
	case <-ended:
		return true
	case <-time.After(time.Second):
		return false
	}
}
