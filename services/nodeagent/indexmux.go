package nodeagent

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// PodIndex says which pods are bound to a node: the node pod index
// (bus.NodePods), or one watch of every pod shared by the nodes of a
// process, which derives it (sharedIndex).
type PodIndex interface {
	// Watch streams the node's pods: the current set as Added, Synced,
	// then changes; the channel closes when the watch ends.
	Watch(ctx context.Context, node string) (<-chan bus.Event, error)
}

// sharedIndex serves the pods of many nodes from one watch of every pod,
// routing each to the node it is bound to as the node pod index would
// (bus.PodChange): a host of a thousand nodes sees most pods anyway,
// and deriving its index saves the scheduler a write for each bind. It
// keeps each node's current pods, so that a node that starts (or starts
// again) watching gets its set, then what changes.
type sharedIndex struct {
	mu     sync.Mutex
	synced bool
	pods   map[string]map[string]*object.Object // node → pod key → latest
	subs   map[string]*indexSub
}

// indexSub is one node's watch; done closes when its watcher has gone, so
// that nothing waits to send it more.
type indexSub struct {
	ch   chan bus.Event
	done chan struct{}
	// unwatch forgets the watcher's context, once the watch ends first.
	unwatch func() bool
}

// end closes a watch that ends before its watcher's context; x.mu is held.
func (s *indexSub) end() {
	s.unwatch()
	close(s.ch)
}

func (s *indexSub) send(ev bus.Event) {
	select {
	case s.ch <- ev: // a node that falls behind holds up the others: backpressure
	case <-s.done:
	}
}

func newSharedIndex() *sharedIndex {
	return &sharedIndex{pods: map[string]map[string]*object.Object{}, subs: map[string]*indexSub{}}
}

// run follows every pod until ctx ends, watching again should its watch
// end.
func (x *sharedIndex) run(ctx context.Context, pods *bus.Store) {
	for ctx.Err() == nil {
		ch, err := pods.Watch(ctx, bus.WatchOptions{Shared: true, SkipStatus: true, SkipCreate: unbound, Buffer: 4096})
		if err == nil {
			bound := map[string]boundPod{}
			for ev := range ch {
				x.derive(bound, ev)
			}
		}
		// The next watch sends every node's set afresh: the nodes watching
		// start over, as after a watch of their own that ended.
		x.reset()
		clock.Sleep(ctx, 100*time.Millisecond)
	}
}

// unbound reports a stored pod no node runs yet, read from its JSON alone:
// its create concerns no node, and reading one field costs a fraction of
// decoding the pod (in 1,000 small Deployments, half the changes a host
// decoded were such creates). Where the writer's layout l places the
// spec, a spec that does not name nodeName is unbound without reading the
// rest (the pod read whole was a twentieth of a host's CPU).
func unbound(value []byte, l object.Layout) bool {
	if spec, _, ok := l.Parts(value); ok {
		if spec == nil {
			return true
		}
		if spec[0] == '{' && !bytes.Contains(spec, []byte(`nodeName`)) && bytes.IndexByte(spec, '\\') < 0 {
			return true
		}
	}
	var p struct {
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	}
	return json.Unmarshal(value, &p, jsontext.AllowDuplicateNames(true)) == nil && p.Spec.NodeName == ""
}

// derive routes a pod's change to the nodes it concerns; bound holds the
// last state of each pod bound to a node, by key.
func (x *sharedIndex) derive(bound map[string]boundPod, ev bus.Event) {
	c := bus.PodChange{Key: ev.Key, Old: bound[ev.Key].pod, OldNode: bound[ev.Key].node, Trace: ev.Trace}
	switch ev.Type {
	case bus.Synced:
		x.apply("", ev)
		return
	case bus.Added, bus.Modified:
		c.New, c.NewNode = ev.Object, kinds.BoundNode(ev.Object)
	case bus.Deleted:
	default:
		return // a corrupt value is the store's to report, not the nodes'
	}
	for _, ch := range c.IndexChanges(everyNode) {
		out := bus.Event{Type: bus.Deleted, Key: ch.Key, Revision: ev.Revision, Trace: ch.Trace}
		if ch.Pod != nil {
			out.Type, out.Object = ev.Type, ch.Pod
		}
		x.apply(ch.Node, out)
	}
	if c.NewNode != "" {
		bound[ev.Key] = boundPod{c.New, c.NewNode}
	} else {
		delete(bound, ev.Key)
	}
}

// boundPod is a pod's last state and the node it is bound to.
type boundPod struct {
	pod  *object.Object
	node string
}

func everyNode(string) bool { return true }

// apply passes a node's event (Synced, to every node) to its watch.
func (x *sharedIndex) apply(node string, ev bus.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if ev.Type == bus.Synced {
		x.synced = true
		for _, sub := range x.subs {
			sub.send(ev)
		}
		return
	}
	switch ev.Type {
	case bus.Added, bus.Modified:
		if x.pods[node] == nil {
			x.pods[node] = map[string]*object.Object{}
		}
		x.pods[node][ev.Key] = ev.Object
	case bus.Deleted:
		delete(x.pods[node], ev.Key)
	}
	if sub, ok := x.subs[node]; ok {
		sub.send(ev)
	}
}

func (x *sharedIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for node, sub := range x.subs {
		sub.end()
		delete(x.subs, node)
	}
	x.pods, x.synced = map[string]map[string]*object.Object{}, false
}

// subBuffer is the room each node's watch has beyond its current set. An
// event is some 200 bytes and every node of the process has a watch, so
// the room is small: 1,024 took 160 MB for a thousand nodes, 64 took
// 125 MB for 5,000 nodes of 20 pods, and 16 some 20 MB. A node that
// fills it holds up the others until it has taken an event; a node's
// agent takes each at once.
const subBuffer = 8

// Watch streams one node's pods: those known now as Added (and Synced,
// once the whole index has been read), then changes.
func (x *sharedIndex) Watch(ctx context.Context, node string) (<-chan bus.Event, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.subs[node]; ok {
		old.end()
	}
	sub := &indexSub{ch: make(chan bus.Event, subBuffer+len(x.pods[node])), done: make(chan struct{})}
	// A node's set is sent as objects alone, at their revisions, with
	// no trace: a pod that has not started yet starts a trace of its own
	// (an event kept a pod was three times the size, and a host keeps
	// 100,000).
	for key, o := range x.pods[node] {
		r, _ := bus.Revision(o.Metadata.ResourceVersion)
		sub.ch <- bus.Event{Type: bus.Added, Key: key, Object: o, Revision: r}
	}
	if x.synced {
		sub.ch <- bus.Event{Type: bus.Synced}
	}
	x.subs[node] = sub
	// Each watch that ends before ctx drops its hold on it: a node that
	// watches again after every restart of the shared watch would pile
	// them up otherwise.
	sub.unwatch = context.AfterFunc(ctx, func() {
		close(sub.done)
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.subs[node] == sub {
			close(sub.ch)
			delete(x.subs, node)
		}
	})
	return sub.ch, nil
}
