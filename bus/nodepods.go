package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

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

func nodeSubject(node, key string) string { return nodePodsPrefix + node + "." + key }

// Set records pod as bound to node, carrying the trace context of ctx.
func (n *NodePods) Set(ctx context.Context, node string, pod *object.Object) (jetstream.PubAckFuture, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	hdr := nats.Header{}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(hdr))
	return n.conn.JS.PublishMsgAsync(&nats.Msg{Subject: nodeSubject(node, pod.Key()), Data: data, Header: hdr})
}

// Remove records that the pod with key is no longer on node.
func (n *NodePods) Remove(ctx context.Context, node, key string) (jetstream.PubAckFuture, error) {
	hdr := nats.Header{kvOp: []string{kvDel}}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(hdr))
	return n.conn.JS.PublishMsgAsync(&nats.Msg{Subject: nodeSubject(node, key), Header: hdr}, jetstream.WithMsgTTL(removalTTL))
}

// Wait waits for async publishes.
func (n *NodePods) Wait(ctx context.Context, fs []jetstream.PubAckFuture) error {
	for _, f := range fs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return translate(err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Watch streams the pods of one node: the current set as Added, Synced,
// then changes (Deleted when a pod leaves the node).
func (n *NodePods) Watch(ctx context.Context, node string) (<-chan Event, error) {
	prefix := nodePodsPrefix + node + "."
	return n.conn.watchStream(ctx, streamWatch{
		stream: nodePodsStream, filter: prefix + ">", name: "pods of node " + node, buffer: 1024,
		decode: func(subject string, hdr nats.Header, data []byte, seq uint64, live bool) Event {
			ev := Event{Key: strings.TrimPrefix(subject, prefix), Revision: seq, Header: hdr}
			if hdr.Get(kvOp) == kvDel || hdr.Get(jetstream.MarkerReasonHeader) != "" || len(data) == 0 {
				ev.Type = Deleted
				return ev
			}
			var o object.Object
			if err := json.Unmarshal(data, &o); err != nil {
				return Event{Type: Failed, Key: ev.Key, Err: fmt.Errorf("bus: node pod %s: %w", ev.Key, err)}
			}
			ev.Object = &o
			ev.Type = Modified
			if !live {
				ev.Type = Added
			}
			return ev
		},
	})
}
