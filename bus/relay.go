package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// The node relay writes pods for node agents. Pod keys carry no node, so a
// node's credentials cannot be confined to its pods by subject; instead an
// agent asks the relay, on a subject its credentials pin to its node, and
// the relay writes only pods bound to that node, and of them only the
// status, or the final removal of a pod being deleted (what Kubernetes'
// NodeRestriction admits for a kubelet). It also keeps the node's
// heartbeat lease: the leases' bucket allows rollups (its expiry's delete
// markers need them), so a node that could publish to it could empty it
// with one message, every other node's heartbeat and every leader's lease
// with it.

const (
	relayPrefix = "hs.relay."
	relayQueue  = "homeostat-relay"
	// relayWorkers bounds the requests the relay handles at once.
	relayWorkers = 64
)

// A node's requests come on subjects of its own: its pods' on one, its
// heartbeat's on another, served apart so that a burst of pod writes does
// not delay a heartbeat.
func relaySubject(node string) string { return relayPrefix + nodeToken(node) + ".pods" }

func heartbeatSubject(node string) string { return relayPrefix + nodeToken(node) + ".heartbeat" }

// relayNode is the node whose relay subject subject is.
func relayNode(subject string) string {
	token, _, _ := strings.Cut(strings.TrimPrefix(subject, relayPrefix), ".")
	return tokenNode(token)
}

// ErrForbidden: the relay refused a write the node may not make.
var ErrForbidden = errors.New("forbidden")

type relayRequest struct {
	// Op is "status" (Pod's status, at Pod's resourceVersion), "remove"
	// (Key, whose UID must match, once it is being deleted), "config"
	// (what the pod at Key, with UID, refers to), or, on the heartbeat's
	// subject, "acquire" and "renew" (see heartbeat.go).
	Op  string         `json:"op"`
	Pod *object.Object `json:"pod,omitempty"`
	Key string         `json:"key,omitempty"`
	UID string         `json:"uid,omitempty"`
	// Lease is the heartbeat's holder, time to live and, to renew, the
	// revision it holds.
	Lease *relayLease `json:"lease,omitempty"`
}

type relayReply struct {
	Pod    *object.Object `json:"pod,omitempty"`
	Config *PodConfig     `json:"config,omitempty"`
	Lease  *relayLease    `json:"lease,omitempty"`
	Code   string         `json:"code,omitempty"`
	Error  string         `json:"error,omitempty"`
}

// The sentinels a reply carries by name, in the order they are tried.
var relayCodes = []struct {
	code string
	err  error
}{
	// ErrThrottled first: it is an ErrUnavailable too.
	{"TooManyRequests", ErrThrottled},
	{"Forbidden", ErrForbidden}, {"Unavailable", ErrUnavailable}, {"NotFound", ErrNotFound},
	{"Conflict", ErrConflict}, {"AlreadyExists", ErrAlreadyExists}, {"Invalid", ErrInvalid},
}

// NodeWriter writes a node's pods, and keeps its heartbeat, through the
// relay.
type NodeWriter struct {
	conn    *Conn
	node    string
	subject string
}

// NodeWriter is the relay's client for node.
func (c *Conn) NodeWriter(node string) (*NodeWriter, error) {
	if err := validNodeName(node); err != nil {
		return nil, err
	}
	return &NodeWriter{conn: c, node: node, subject: relaySubject(node)}, nil
}

// UpdateStatus writes pod's status over the revision in its
// resourceVersion: ErrConflict when the pod has moved on since. The relay
// reads the pod itself and takes only the status: the rest of pod, and
// current, are not trusted.
func (w *NodeWriter) UpdateStatus(ctx context.Context, pod, _ *object.Object) (*object.Object, error) {
	return w.ask(ctx, relayRequest{Op: "status", Pod: pod})
}

// Remove deletes a pod being deleted whose containers have stopped.
func (w *NodeWriter) Remove(ctx context.Context, key, uid string) error {
	_, err := w.ask(ctx, relayRequest{Op: "remove", Key: key, UID: uid})
	return err
}

func (w *NodeWriter) ask(ctx context.Context, req relayRequest) (*object.Object, error) {
	rep, err := w.conn.askRelay(ctx, "node relay", w.subject, req)
	if err != nil {
		return nil, err
	}
	return rep.Pod, nil
}

// askRelay sends req to a relay of the API on subject and returns its
// reply, or the error it names as a sentinel.
func (c *Conn) askRelay(ctx context.Context, what, subject string, req any) (*relayReply, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	injectTrace(ctx, msg.Header)
	ctx, cancel := bounded(ctx)
	defer cancel()
	m, err := c.nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("bus: %s: %w: no relay is running", what, ErrUnavailable)
		}
		return nil, fmt.Errorf("bus: %s: %w", what, translate(err))
	}
	var rep relayReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return nil, fmt.Errorf("bus: %s: bad reply: %w", what, err)
	}
	if err := rep.err(what); err != nil {
		return nil, err
	}
	return &rep, nil
}

// ServeNodeRelay answers node agents' requests until ctx ends. Replicas
// share the work (a queue group).
func (c *Conn) ServeNodeRelay(ctx context.Context, log *slog.Logger) error {
	pods, err := c.Store(ctx, StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		return err
	}
	configs, err := openConfigStores(ctx, c)
	if err != nil {
		return err
	}
	leases, err := c.Leases(ctx)
	if err != nil {
		return err
	}
	// Only the node's agent can be answered on its inbox. Another node
	// cannot publish here, but it can have a stream deliver here (a push
	// consumer's deliver subject) values it wrote itself; those come with
	// an acknowledgement subject instead.
	fromNode := func(m *nats.Msg) bool {
		node := relayNode(m.Subject)
		if strings.HasPrefix(m.Reply, nodeInbox(node)+".") {
			return true
		}
		relayRefusals.WithLabelValues("dropped").Inc()
		log.Warn("node relay dropped a message not sent by the node's agent", "node", node, "reply", m.Reply)
		return false
	}
	// Each subject its own subscription and workers; either's end ends both.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	limits := &heartbeatLimits{}
	go func() {
		done <- c.serveRequests(ctx, serving{subject: heartbeatSubject("*"), queue: relayQueue, accept: fromNode,
			refuse: func(m *nats.Msg) *relayReply {
				node := relayNode(m.Subject)
				if limits.allow(node, time.Now()) {
					return nil
				}
				relayRefusals.WithLabelValues("throttled").Inc()
				rep := failed(fmt.Errorf("%w: node %s's heartbeats: at most %d a second", ErrThrottled, node, heartbeatRate))
				return &rep
			},
			handle: func(ctx context.Context, m *nats.Msg) relayReply {
				return relayHeartbeat(ctx, leases, relayNode(m.Subject), m.Data)
			}})
	}()
	go func() {
		done <- c.serveRequests(ctx, serving{subject: relaySubject("*"), queue: relayQueue, accept: fromNode,
			handle: func(ctx context.Context, m *nats.Msg) relayReply {
				node := relayNode(m.Subject)
				rep := relayWrite(ctx, relayStores{pods: pods, configs: configs}, node, m.Data)
				if rep.Code == "Forbidden" {
					relayRefusals.WithLabelValues("forbidden").Inc()
					log.Warn("node relay refused a write", "node", node, "err", rep.Error)
				}
				return rep
			}})
	}()
	err = <-done
	cancel()
	return errors.Join(err, <-done)
}

// podWriter is what the relay needs of the pods' store.
type podWriter interface {
	Get(ctx context.Context, key string) (*object.Object, error)
	Update(ctx context.Context, o *object.Object, opts UpdateOptions) (*object.Object, error)
	Delete(ctx context.Context, key string, opts DeleteOptions) (*object.Object, bool, error)
}

// relayStores are what the relay reads and writes.
type relayStores struct {
	pods    podWriter
	configs configStores
}

// relayWrite carries out one request of node, if node may make it.
func relayWrite(ctx context.Context, st relayStores, node string, data []byte) relayReply {
	pods := st.pods
	var req relayRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return failed(fmt.Errorf("%w: %v", ErrInvalid, err))
	}
	key, uid := req.Key, req.UID
	if req.Op == "status" {
		if req.Pod == nil {
			return failed(fmt.Errorf("%w: a status write needs the pod", ErrInvalid))
		}
		key, uid = req.Pod.Key(), req.Pod.Metadata.UID
	} else if req.Op != "remove" && req.Op != "config" {
		return failed(fmt.Errorf("%w: unknown operation %q", ErrInvalid, req.Op))
	}
	stored, err := pods.Get(ctx, key)
	if err != nil {
		return failed(err)
	}
	if err := mayWrite(node, req, stored); err != nil {
		return failed(err)
	}
	if uid != stored.Metadata.UID {
		return failed(fmt.Errorf("%w: pod %s is another pod now (uid %s)", ErrConflict, key, stored.Metadata.UID))
	}
	if req.Op == "config" {
		cfg, err := st.configs.read(ctx, stored)
		if err != nil {
			return failed(err)
		}
		return relayReply{Config: cfg}
	}
	if req.Op == "remove" {
		zero := int64(0)
		_, _, err := pods.Delete(ctx, key, DeleteOptions{UID: uid, GracePeriodSeconds: &zero})
		if err != nil {
			return failed(err)
		}
		return relayReply{}
	}
	if req.Pod.Metadata.ResourceVersion != stored.Metadata.ResourceVersion {
		return failed(fmt.Errorf("%w: pod %s is at revision %s", ErrConflict, key, stored.Metadata.ResourceVersion))
	}
	n := stored.Clone()
	n.Status = req.Pod.Status
	updated, err := pods.Update(ctx, n, UpdateOptions{Current: stored})
	if err != nil {
		return failed(err)
	}
	return relayReply{Pod: updated}
}

// mayWrite is the relay's rule: the pod must be bound to the node, and a
// removal is only of a pod being deleted.
func mayWrite(node string, req relayRequest, stored *object.Object) error {
	var spec kinds.PodSpec
	if err := stored.DecodeSpec(&spec); err != nil {
		return fmt.Errorf("%w: pod %s: %v", ErrInvalid, stored.Key(), err)
	}
	if spec.NodeName != node {
		return fmt.Errorf("%w: pod %s is not bound to node %s", ErrForbidden, stored.Key(), node)
	}
	if req.Op == "remove" && !stored.Metadata.Deleting() {
		return fmt.Errorf("%w: pod %s is not being deleted", ErrForbidden, stored.Key())
	}
	return nil
}

// err is the error a reply names, as its sentinel; nil for an answer.
func (rep relayReply) err(what string) error {
	if rep.Code == "" && rep.Error == "" {
		return nil
	}
	for _, c := range relayCodes {
		if c.code == rep.Code {
			return fmt.Errorf("bus: %s: %w: %s", what, c.err, rep.Error)
		}
	}
	return fmt.Errorf("bus: %s: %s", what, rep.Error)
}

func failed(err error) relayReply {
	for _, c := range relayCodes {
		if errors.Is(err, c.err) {
			return relayReply{Code: c.code, Error: err.Error()}
		}
	}
	return relayReply{Error: err.Error()}
}
