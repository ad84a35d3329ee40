package nodeagent

import (
	"context"
	"errors"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
)

// NodeLeaseNamespace holds each node's Lease, as in Kubernetes.
const NodeLeaseNamespace = "kube-node-lease"

// nodeLease keeps the node's Lease object (coordination.k8s.io/v1, named
// for the node in kube-node-lease) renewed with each heartbeat, as a
// kubelet does, for the tools that read it (kubectl describe node). What
// the control plane acts on is the bus's heartbeat lease, which expires by
// itself; this one only shows it.
type nodeLease struct {
	store *bus.Store
	node  string
	last  *object.Object // our latest write, for compare-and-swap
}

type leaseSpec struct {
	HolderIdentity       string `json:"holderIdentity"`
	LeaseDurationSeconds int32  `json:"leaseDurationSeconds"`
	RenewTime            string `json:"renewTime"`
	AcquireTime          string `json:"acquireTime,omitempty"`
}

// microTime is Kubernetes' MicroTime form.
const microTime = "2006-01-02T15:04:05.000000Z07:00"

// renew writes the Lease with renewTime now, owned by the Node (so that it
// goes with it), taking the stored one over when ours is stale.
func (l *nodeLease) renew(ctx context.Context, nodeUID string, grace time.Duration) error {
	now := time.Now().UTC().Format(microTime)
	for attempt := 0; attempt < 2; attempt++ {
		if l.last == nil {
			cur, err := l.store.Get(ctx, object.Key(NodeLeaseNamespace, l.node))
			if err != nil && !errors.Is(err, bus.ErrNotFound) {
				return err
			}
			l.last = cur
		}
		spec := leaseSpec{HolderIdentity: l.node, LeaseDurationSeconds: int32(grace / time.Second), RenewTime: now, AcquireTime: now}
		var err error
		var written *object.Object
		if l.last == nil {
			o := &object.Object{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Metadata: object.Meta{Namespace: NodeLeaseNamespace, Name: l.node}}
			if nodeUID != "" {
				o.Metadata.OwnerReferences = []object.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: l.node, UID: nodeUID}}
			}
			if err := o.SetSpec(spec); err != nil {
				return err
			}
			written, err = l.store.Create(ctx, o)
		} else {
			var old leaseSpec
			if l.last.DecodeSpec(&old) == nil && old.AcquireTime != "" {
				spec.AcquireTime = old.AcquireTime
			}
			n := l.last.Clone()
			if err := n.SetSpec(spec); err != nil {
				return err
			}
			written, err = l.store.Update(ctx, n, bus.UpdateOptions{Current: l.last})
		}
		if errors.Is(err, bus.ErrConflict) || errors.Is(err, bus.ErrAlreadyExists) || errors.Is(err, bus.ErrNotFound) {
			l.last = nil
			continue
		}
		if err != nil {
			return err
		}
		l.last = written
		return nil
	}
	return bus.ErrConflict
}
