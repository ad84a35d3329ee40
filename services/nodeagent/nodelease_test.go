package nodeagent

import (
	"context"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// The node's Lease is made owned by its Node, renewed with its first
// acquisition kept, and taken back when another wrote it meanwhile.
func TestNodeLeaseRenews(t *testing.T) {
	ctx := context.Background()
	conn := bustest.Conn(t)
	st, err := conn.Store(ctx, bus.StoreSpec{Resource: "leases.coordination.k8s.io", Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	l := &nodeLease{store: st, node: "n1"}
	read := func() (leaseSpec, *object.Object) {
		t.Helper()
		o, err := st.Get(ctx, "kube-node-lease.n1")
		if err != nil {
			t.Fatal(err)
		}
		var s leaseSpec
		if err := o.DecodeSpec(&s); err != nil {
			t.Fatal(err)
		}
		return s, o
	}
	if err := l.renew(ctx, "uid-1", 40*time.Second); err != nil {
		t.Fatal(err)
	}
	first, o := read()
	if first.HolderIdentity != "n1" || first.LeaseDurationSeconds != 40 || first.RenewTime == "" ||
		len(o.Metadata.OwnerReferences) != 1 || o.Metadata.OwnerReferences[0].UID != "uid-1" {
		t.Fatalf("lease %+v owners %+v", first, o.Metadata.OwnerReferences)
	}
	// Another writer moves it on: the next renewal reads it again.
	n := o.Clone()
	n.Metadata.Labels = map[string]string{"touched": "yes"}
	if _, err := st.Update(ctx, n, bus.UpdateOptions{Current: o}); err != nil {
		t.Fatal(err)
	}
	if err := l.renew(ctx, "uid-1", 40*time.Second); err != nil {
		t.Fatal(err)
	}
	second, o := read()
	if second.AcquireTime != first.AcquireTime || o.Metadata.Labels["touched"] != "yes" {
		t.Fatalf("after renewal: %+v %v (first %+v)", second, o.Metadata.Labels, first)
	}
	renewed, err := time.Parse(microTime, second.RenewTime)
	if err != nil || time.Since(renewed) > time.Minute {
		t.Fatalf("renewTime %q: %v", second.RenewTime, err)
	}
}
