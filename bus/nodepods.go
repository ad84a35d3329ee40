package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// NodePods is a per-node index of pods: the pods bound to each node, under
// np.<node>.<namespace>.<name>, the last message of each subject being the
// pod's current state (or a removal marker, which expires after a while).
// A node agent watches only its own subjects, so a cluster of a thousand
// nodes does not send every pod change to every agent. The scheduler keeps
// the index from its watch of all pods.
type NodePods struct {
	conn *Conn
}

const (
	nodePodsStream = "HS_NODE_PODS"
	nodePodsPrefix = "np."
	// removalTTL is how long a removal marker stays; an agent down longer
	// than this finds the pod gone from its view and stops it anyway.
	removalTTL = time.Hour
)

// NodePods opens (creating when needed) the node pod index.
func (c *Conn) NodePods(ctx context.Context) (*NodePods, error) {
	err := c.ensureStream(ctx, jetstream.StreamConfig{
		Name:              nodePodsStream,
		Description:       "homeostat pods by node",
		Subjects:          []string{nodePodsPrefix + ">"},
		MaxMsgsPerSubject: 1,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
		Replicas:          c.replicas,
		AllowMsgTTL:       true,
	})
	if err != nil {
		return nil, err
	}
	return &NodePods{conn: c}, nil
}

// nodeSubject names a node in one token (nodeToken): with its dots, node
// "a" would take node "a.b"'s pods for its own.
func nodeSubject(node, key string) string { return nodePodsPrefix + nodeToken(node) + "." + key }

// NodePodChange is one entry of the index: a pod bound to a node, or (Pod
// nil) its removal from it.
type NodePodChange struct {
	Node string
	Key  string
	Pod  *object.Object
	// Trace is the trace of the write the agent will act on.
	Trace trace.SpanContext
}

// PodChange is a pod's change as the node pod index sees it: its states
// before and after (Old nil: it was created; New nil: it is gone) and
// the nodes they are bound to ("" for none; see kinds.BoundNode).
type PodChange struct {
	// Key is the pod's; "" takes it from Old or New. A reader that holds
	// it already passes it, and the index's entries keep one copy.
	Key              string
	Old, New         *object.Object
	OldNode, NewNode string
	// Trace is the trace of the write that made the change.
	Trace trace.SpanContext
}

// IndexChanges lists what the change makes of the index: a removal from
// the node the pod left, and its entry on the node it is on when it
// arrived there or changed in what an agent acts on (kinds.SameToAgent),
// and entries says that node takes entries.
func (c PodChange) IndexChanges(entries func(node string) bool) []NodePodChange {
	var out []NodePodChange
	if c.OldNode != "" && c.OldNode != c.NewNode {
		out = append(out, NodePodChange{Node: c.OldNode, Key: c.key(c.Old)})
	}
	if c.NewNode != "" && entries(c.NewNode) && (c.NewNode != c.OldNode || !kinds.SameToAgent(c.Old, c.New)) {
		out = append(out, NodePodChange{Node: c.NewNode, Key: c.key(c.New), Pod: c.New, Trace: c.Trace})
	}
	return out
}

func (c PodChange) key(o *object.Object) string {
	if c.Key != "" {
		return c.Key
	}
	return o.Key()
}

// Publish writes changes to the index and waits until it has them all.
// Writes are idempotent, so a failed batch may be published again whole.
func (n *NodePods) Publish(ctx context.Context, changes []NodePodChange) error {
	futures := make([]jetstream.PubAckFuture, 0, len(changes))
	for _, ch := range changes {
		hdr := nats.Header{}
		injectSpan(ch.Trace, hdr)
		msg := &nats.Msg{Subject: nodeSubject(ch.Node, ch.Key), Header: hdr}
		opts := []jetstream.PublishOpt{jetstream.WithStallWait(tryTimeout)}
		if ch.Pod == nil {
			hdr.Set(kvOp, kvDel)
			opts = append(opts, jetstream.WithMsgTTL(removalTTL))
		} else {
			data, err := json.Marshal(ch.Pod)
			if err != nil {
				return err
			}
			msg.Data = data
		}
		f, err := n.conn.js.PublishMsgAsync(msg, opts...)
		if err != nil {
			return fmt.Errorf("bus: node pod index: %w", translate(err))
		}
		futures = append(futures, f)
	}
	return waitAcks(ctx, futures)
}

// Watch streams the pods of one node: the current set as Added, Synced,
// then changes (Deleted when a pod leaves the node).
func (n *NodePods) Watch(ctx context.Context, node string) (<-chan Event, error) {
	prefix := nodePodsPrefix + nodeToken(node) + "."
	spec := readSpec{stream: nodePodsStream, filter: prefix + ">", what: "pods of node " + node}
	return n.conn.watch(ctx, spec, 1024, true, n.decoder(func(subject string) string { return strings.TrimPrefix(subject, prefix) })), nil
}

// decoder decodes the index's messages, keyed by key(subject).
func (n *NodePods) decoder(key func(subject string) string) func(rawMsg, bool) Event {
	return func(m rawMsg, live bool) Event {
		ev := Event{Key: key(m.subject), Revision: m.seq, Trace: extractSpan(m.header)}
		if isTombstone(m.header) || len(m.data) == 0 {
			ev.Type = Deleted
			return ev
		}
		o, err := object.Decode(m.data)
		if err != nil || o == nil {
			ev.Type, ev.Err = Corrupt, &CorruptError{Resource: "node pod index", Key: ev.Key, Revision: m.seq, Reason: fmt.Sprint("not an object: ", err)}
			return ev
		}
		ev.Object = o
		ev.Type = Modified
		if !live {
			ev.Type = Added
		}
		return ev
	}
}
