package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/homeostat/homeostat/object"
)

// The collector removes protected objects for the controllers. RBAC
// objects and tokens grant access, so the controllers' credentials may
// not write them (a delete is a write on the same subject); yet the
// namespace controller empties a namespace being deleted, and the garbage
// collector removes the tokens of a deleted ServiceAccount and drops its
// finalizers. They ask the API's replicas instead, which check on what
// they read themselves that the object is garbage.

const (
	collectSubject = relayPrefix + "control.collect"
	collectQueue   = "homeostat-collector"
)

// protectedStores are the resources only the API writes.
var protectedStores = map[string]StoreSpec{
	"roles.rbac.authorization.k8s.io":               {Resource: "roles.rbac.authorization.k8s.io", Kind: "Role", Namespaced: true},
	"rolebindings.rbac.authorization.k8s.io":        {Resource: "rolebindings.rbac.authorization.k8s.io", Kind: "RoleBinding", Namespaced: true},
	"clusterroles.rbac.authorization.k8s.io":        {Resource: "clusterroles.rbac.authorization.k8s.io", Kind: "ClusterRole"},
	"clusterrolebindings.rbac.authorization.k8s.io": {Resource: "clusterrolebindings.rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	"tokens.homeostat.io":                           {Resource: "tokens.homeostat.io", Kind: "Token", Namespaced: true},
}

// Protected reports whether the controllers must remove objects of
// resource through the API (Collect, Finalize) rather than write them.
func Protected(resource string) bool {
	_, ok := protectedStores[resource]
	return ok
}

// ownerStores are what the rule reads besides the object.
var ownerStores = map[string]StoreSpec{
	"namespaces":      {Resource: "namespaces", Kind: "Namespace"},
	"serviceaccounts": {Resource: "serviceaccounts", Kind: "ServiceAccount", Namespaced: true},
}

type collectRequest struct {
	// Op is "delete" (the object is garbage) or "finalize" (drop
	// Finalizer, the garbage collector's, from an object being deleted).
	Op        string `json:"op"`
	Resource  string `json:"resource"`
	Key       string `json:"key"`
	UID       string `json:"uid"`
	Finalizer string `json:"finalizer,omitempty"`
}

// Collect asks the API to delete a protected object that is garbage: its
// namespace is being deleted or gone, or (a token) the ServiceAccount
// that owns it is. ErrForbidden when it is not garbage.
func (c *Conn) Collect(ctx context.Context, resource, key, uid string) error {
	_, err := c.askRelay(ctx, "collector", collectSubject, collectRequest{Op: "delete", Resource: resource, Key: key, UID: uid})
	return err
}

// Finalize asks the API to drop finalizer (orphan or foregroundDeletion)
// from a protected object being deleted.
func (c *Conn) Finalize(ctx context.Context, resource, key, uid, finalizer string) error {
	_, err := c.askRelay(ctx, "collector", collectSubject,
		collectRequest{Op: "finalize", Resource: resource, Key: key, UID: uid, Finalizer: finalizer})
	return err
}

// ServeCollector answers Collect and Finalize until ctx ends. Replicas
// share the work (a queue group).
func (c *Conn) ServeCollector(ctx context.Context, log *slog.Logger) error {
	return c.serveRequests(ctx, serving{subject: collectSubject, queue: collectQueue,
		handle: func(ctx context.Context, m *nats.Msg) relayReply {
			rep := c.collect(ctx, m.Data)
			if rep.Code == "Forbidden" {
				log.Warn("collector refused a removal", "err", rep.Error)
			}
			return rep
		}})
}

func (c *Conn) collect(ctx context.Context, data []byte) relayReply {
	var req collectRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return failed(fmt.Errorf("%w: %v", ErrInvalid, err))
	}
	spec, ok := protectedStores[req.Resource]
	if !ok {
		return failed(fmt.Errorf("%w: %s is not removed through the collector", ErrForbidden, req.Resource))
	}
	st, err := c.Store(ctx, spec)
	if err != nil {
		return failed(err)
	}
	stored, err := st.Get(ctx, req.Key)
	if err != nil {
		return failed(err)
	}
	if stored.Metadata.UID != req.UID {
		return failed(fmt.Errorf("%w: %s %s is another object now (uid %s)", ErrConflict, req.Resource, req.Key, stored.Metadata.UID))
	}
	lookup := func(resource, key string) (*object.Object, error) {
		st, err := c.Store(ctx, ownerStores[resource])
		if err != nil {
			return nil, err
		}
		return st.Get(ctx, key)
	}
	if err := mayCollect(req, stored, lookup); err != nil {
		return failed(err)
	}
	if req.Op == "finalize" {
		n := stored.Clone()
		n.Metadata.RemoveFinalizer(req.Finalizer)
		_, err = st.Update(ctx, n, UpdateOptions{Current: stored})
	} else {
		_, _, err = st.Delete(ctx, req.Key, DeleteOptions{UID: req.UID})
	}
	if err != nil {
		return failed(err)
	}
	return relayReply{}
}

// mayCollect is the collector's rule. A delete is of an object whose
// namespace is being deleted or gone, or of a token whose ServiceAccount
// is being deleted or gone; a finalize drops one of the garbage
// collector's finalizers from an object already being deleted. lookup
// reads an object by resource and key.
func mayCollect(req collectRequest, stored *object.Object, lookup func(resource, key string) (*object.Object, error)) error {
	switch req.Op {
	case "finalize":
		if req.Finalizer != object.FinalizerOrphan && req.Finalizer != object.FinalizerForeground {
			return fmt.Errorf("%w: finalizer %q is not the garbage collector's", ErrForbidden, req.Finalizer)
		}
		if !stored.Metadata.Deleting() {
			return fmt.Errorf("%w: %s %s is not being deleted", ErrForbidden, req.Resource, req.Key)
		}
		return nil
	case "delete":
	default:
		return fmt.Errorf("%w: unknown operation %q", ErrInvalid, req.Op)
	}
	if ns := stored.Metadata.Namespace; ns != "" {
		if gone, err := goneOrGoing(lookup, "namespaces", ns, ""); err != nil || gone {
			return err
		}
	}
	if req.Resource == "tokens.homeostat.io" {
		for _, r := range stored.Metadata.OwnerReferences {
			if r.Kind != "ServiceAccount" {
				continue
			}
			key := object.Key(stored.Metadata.Namespace, r.Name)
			if gone, err := goneOrGoing(lookup, "serviceaccounts", key, r.UID); err != nil || gone {
				return err
			}
		}
	}
	return fmt.Errorf("%w: %s %s is not garbage: its namespace and owners are there", ErrForbidden, req.Resource, req.Key)
}

// goneOrGoing reports whether the object at key is absent, being deleted,
// or (uid given) another object than uid.
func goneOrGoing(lookup func(resource, key string) (*object.Object, error), resource, key, uid string) (bool, error) {
	o, err := lookup(resource, key)
	if errors.Is(err, ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return o.Metadata.Deleting() || (uid != "" && o.Metadata.UID != uid), nil
}

// serving says which requests serveRequests answers, and how.
type serving struct {
	// subject and queue: the requests, shared with the other replicas in
	// queue.
	subject, queue string
	// accept, when set, drops a request it refuses unanswered.
	accept func(*nats.Msg) bool
	// refuse, when set, answers a request at once with the reply it gives,
	// before the request takes a worker: what a flood of one sender must
	// not hold up for others.
	refuse func(*nats.Msg) *relayReply
	// handle answers a request, on a worker.
	handle func(context.Context, *nats.Msg) relayReply
}

// serveRequests answers the requests sv says, at most relayWorkers at
// once, until ctx ends.
func (c *Conn) serveRequests(ctx context.Context, sv serving) error {
	ch := make(chan *nats.Msg, relayWorkers)
	sub, err := c.nc.ChanQueueSubscribe(sv.subject, sv.queue, ch)
	if err != nil {
		return fmt.Errorf("bus: serve %s: %w", sv.subject, translate(err))
	}
	defer func() { _ = sub.Unsubscribe() }()
	sem := make(chan struct{}, relayWorkers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var m *nats.Msg
		select {
		case <-ctx.Done():
			return nil
		case m = <-ch:
		}
		if sv.accept != nil && !sv.accept(m) {
			continue
		}
		if sv.refuse != nil {
			if rep := sv.refuse(m); rep != nil {
				data, _ := json.Marshal(rep)
				_ = m.Respond(data)
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case sem <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			data, _ := json.Marshal(sv.handle(WithSpan(ctx, extractSpan(m.Header)), m))
			_ = m.Respond(data)
		}()
	}
}
