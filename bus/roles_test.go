package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/testenv/poll"
)

// Every confined role is refused stream management, message deletion,
// the audit stream, the bus's bookkeeping, the node relay and any
// subscription but its own inbox.
var refusedToEveryRole = []string{
	"$JS.API.STREAM.CREATE.EVIL", "$JS.API.STREAM.UPDATE.KV_hs_pods", "$JS.API.STREAM.DELETE.KV_hs_deployments_apps",
	"$JS.API.STREAM.PURGE.KV_hs_pods", "$JS.API.STREAM.MSG.DELETE.KV_hs_pods", "$JS.API.STREAM.SNAPSHOT.KV_hs_pods",
	"audit.create", "$KV.hs_meta.compacted.hs_pods", "hs.relay.n2.pods",
}

// What, beyond that, each role is refused, and the objects (by resource
// and key) that must stay as they were.
var roleCases = []struct {
	role      bus.Role
	refused   []string
	protected []string
}{
	{bus.RoleScheduler,
		[]string{"$KV.hs_deployments_apps.default.d", "$KV.hs_replicasets_apps.default.rs", "$KV.hs_nodes.n2",
			"$KV.hs_roles_rbac_authorization_k8s_io.default.r", "$KV.hs_clusterrolebindings_rbac_authorization_k8s_io.crb",
			"$KV.hs_tokens_homeostat_io.default.t", "wq.deployment.default.d", "hist.hs_pods.default.x"},
		[]string{"deployments.apps/default.d", "replicasets.apps/default.rs", "nodes/n2",
			"roles.rbac.authorization.k8s.io/default.r", "clusterrolebindings.rbac.authorization.k8s.io/crb"}},
	{bus.RoleSimulated,
		[]string{"$KV.hs_deployments_apps.default.d", "$KV.hs_replicasets_apps.default.rs",
			"$KV.hs_roles_rbac_authorization_k8s_io.default.r", "$KV.hs_clusterrolebindings_rbac_authorization_k8s_io.crb",
			"$KV.hs_tokens_homeostat_io.default.t", "wq.deployment.default.d", "np.n1.default.x", "hist.hs_pods.default.x"},
		[]string{"deployments.apps/default.d", "replicasets.apps/default.rs",
			"roles.rbac.authorization.k8s.io/default.r", "clusterrolebindings.rbac.authorization.k8s.io/crb"}},
	{bus.RoleControllers,
		[]string{"$KV.hs_roles_rbac_authorization_k8s_io.default.r", "$KV.hs_clusterrolebindings_rbac_authorization_k8s_io.crb",
			"$KV.hs_tokens_homeostat_io.default.t", "$KV.hs_rolebindings_rbac_authorization_k8s_io.default.rb",
			"$KV.hs_clusterroles_rbac_authorization_k8s_io.cr"},
		[]string{"roles.rbac.authorization.k8s.io/default.r", "clusterrolebindings.rbac.authorization.k8s.io/crb"}},
}

// Each confined role's credentials suffice for its work (opening what the
// API provisioned, writing its buckets, its work queue), and a raw NATS
// client holding them is refused the rest.
func TestRoleCredentialsAreConfined(t *testing.T) {
	ctx := context.Background()
	op, server := operatorBus(t)
	stores := seedOwners(t, server)
	if err := server.Provision(ctx, bus.ProvisionOptions{Queues: []string{"deployment"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range roleCases {
		t.Run(string(c.role), func(t *testing.T) {
			creds, err := op.RoleCreds(c.role)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := bus.Connect(ctx, bus.Config{URLs: server.ClientURL(), Creds: creds, Name: string(c.role)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(conn.Close)
			roleDoesItsWork(t, conn, c.role)
			snapshot := func() map[string]string {
				out := map[string]string{}
				for _, p := range c.protected {
					res, key := splitRef(p)
					o, err := stores[res].Get(ctx, key)
					if err != nil {
						t.Fatalf("%s: %v", p, err)
					}
					out[p] = o.Metadata.ResourceVersion
				}
				return out
			}
			before := snapshot()
			violations := make(chan error, 64)
			raw := bus.RawConnForTest(t, server.ClientURL(), creds, func(err error) { violations <- err },
				nats.CustomInboxPrefix("_INBOX_"+string(c.role)))
			refused := append(append([]string{}, refusedToEveryRole...), c.refused...)
			for _, subj := range refused {
				if err := raw.Publish(subj, []byte(`{"metadata":{"name":"forged"}}`)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := raw.Subscribe("_INBOX.stolen.>", func(*nats.Msg) {}); err != nil {
				t.Fatal(err)
			}
			want := []string{`subscription to "_INBOX.stolen.>"`}
			for _, subj := range refused {
				want = append(want, `publish to "`+subj+`"`)
			}
			awaitRefusals(t, violations, want)
			if after := snapshot(); !sameMap(after, before) {
				t.Fatalf("role %s changed objects it may not write:\nbefore %v\nafter  %v", c.role, before, after)
			}
		})
	}
}

func splitRef(ref string) (resource, key string) {
	for i := range ref {
		if ref[i] == '/' {
			return ref[:i], ref[i+1:]
		}
	}
	return ref, ""
}

// roleDoesItsWork writes as the role does: the scheduler binds a pod and
// indexes it, a host of simulated nodes writes a Node, a heartbeat and a
// pod's status, the controllers write a Deployment and work its queue.
// None may create a bucket.
func roleDoesItsWork(t *testing.T, conn *bus.Conn, role bus.Role) {
	t.Helper()
	ctx := context.Background()
	pods, err := conn.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := conn.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	switch role {
	case bus.RoleScheduler:
		touch(t, pods, "default.mine")
		idx, err := conn.NodePods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pods.Get(ctx, "default.mine")
		if err != nil {
			t.Fatal(err)
		}
		if err := idx.Publish(ctx, []bus.NodePodChange{{Node: "n1", Key: p.Key(), Pod: p}}); err != nil {
			t.Fatalf("the scheduler indexing a pod: %v", err)
		}
		if _, err := leases.Acquire(ctx, "scheduler", "s1", time.Minute); err != nil {
			t.Fatalf("the scheduler taking its lease: %v", err)
		}
	case bus.RoleSimulated:
		touch(t, pods, "default.theirs")
		nodes, err := conn.Store(ctx, bus.StoreSpec{Resource: "nodes", Kind: "Node"})
		if err != nil {
			t.Fatal(err)
		}
		touch(t, nodes, "n2")
		if _, err := leases.Acquire(ctx, bus.NodeLeaseKey("n2"), "sim", time.Minute); err != nil {
			t.Fatalf("a simulated node's heartbeat: %v", err)
		}
	case bus.RoleControllers:
		d, err := conn.Store(ctx, bus.StoreSpec{Resource: "deployments.apps", Kind: "Deployment", Namespaced: true})
		if err != nil {
			t.Fatal(err)
		}
		touch(t, d, "default.d")
		q, err := conn.Queue(ctx, bus.QueueSpec{Name: "deployment"})
		if err != nil {
			t.Fatalf("the controllers opening their work queue: %v", err)
		}
		if err := q.Add(ctx, bus.Work{Key: "default.d"}); err != nil {
			t.Fatalf("the controllers queueing work: %v", err)
		}
		if err := consumeOne(ctx, q); err != nil {
			t.Fatalf("the controllers working their queue: %v", err)
		}
		h, err := conn.History(ctx, bus.HistoryOptions{})
		if err != nil {
			t.Fatalf("the controllers opening the reconcile history: %v", err)
		}
		if err := h.Append("deployments.apps", "default.d", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "the controllers' history entry", 10*time.Second, func() bool {
			n := 0
			err := h.Read(ctx, "deployments.apps", "default.d", time.Time{}, func([]byte) error { n++; return nil })
			return err == nil && n == 1
		})
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := conn.Store(short, bus.StoreSpec{Resource: "gadgets.example.com", Kind: "Gadget", Namespaced: true}); err == nil {
		t.Fatalf("role %s created a bucket", role)
	}
}

// touch updates an object's labels, as a writer of its bucket.
func touch(t *testing.T, st *bus.Store, key string) {
	t.Helper()
	ctx := context.Background()
	o, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	n := o.Clone()
	n.Metadata.Labels = map[string]string{"touched": "yes"}
	if _, err := st.Update(ctx, n, bus.UpdateOptions{Current: o}); err != nil {
		t.Fatalf("updating %s %s: %v", st.Resource(), key, err)
	}
}

// consumeOne takes one delivery from q and acknowledges it.
func consumeOne(ctx context.Context, q *bus.Queue) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	acked := make(chan error, 1)
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		_ = q.Consume(ctx, 1, func(d *bus.Delivery) {
			select {
			case acked <- d.Ack(ctx):
			default:
			}
		})
	}()
	select {
	case err := <-acked:
		return err
	case <-ctx.Done():
		return errors.New("no delivery within 10s")
	}
}

// A message with Nats-Rollup purges its whole stream where rollups are
// allowed, as they are in a key-value bucket made by NATS's client. The
// roles and the nodes may publish on the buckets' confirmation subjects
// (and the roles on some keys), so the buckets of objects refuse rollups:
// such a message from any of them leaves every object where it was.
func TestRollupsAreRefused(t *testing.T) {
	ctx := context.Background()
	op, server := operatorBus(t)
	stores := seedOwners(t, server)
	pods := stores["pods"]
	before, err := pods.List(ctx, bus.ListOptions{})
	if err != nil || len(before.Items) == 0 {
		t.Fatalf("seeded pods: %v, %v", before, err)
	}
	type who struct {
		name, inbox string
		creds       func() ([]byte, error)
	}
	var all []who
	for _, r := range []bus.Role{bus.RoleControllers, bus.RoleScheduler, bus.RoleSimulated} {
		all = append(all, who{string(r), "_INBOX_" + string(r), func() ([]byte, error) { return op.RoleCreds(r) }})
	}
	all = append(all, who{"node n1", "_INBOX_n1", func() ([]byte, error) { return op.NodeCreds("n1") }})
	// A bucket of the bus's own that a role writes: the retry records.
	if _, err := server.RetryRecords(ctx); err != nil {
		t.Fatal(err)
	}
	admin, err := op.ControlPlaneCreds("admin")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(bus.RawConnForTest(t, server.ClientURL(), admin, func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "$KV.hs_reconcile.seed", []byte("x")); err != nil {
		t.Fatal(err)
	}
	leases, err := server.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Acquire(ctx, "scheduler", "s1", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, w := range all {
		creds, err := w.creds()
		if err != nil {
			t.Fatal(err)
		}
		raw := bus.RawConnForTest(t, server.ClientURL(), creds, func(error) {}, nats.CustomInboxPrefix(w.inbox))
		subjects := []string{"$KV.hs_pods", "$KV.hs_pods.default.mine"}
		if w.name == string(bus.RoleControllers) {
			subjects = append(subjects, "$KV.hs_reconcile.x")
		}
		if w.name == "node n1" {
			// The leases' bucket allows rollups: a node may not publish
			// there at all, not even on its own heartbeat's key.
			subjects = append(subjects, "$KV.hs_leases.node.n1")
		}
		for _, subj := range subjects {
			msg := &nats.Msg{Subject: subj, Header: nats.Header{"Nats-Rollup": []string{"all"}}}
			reply, err := raw.RequestMsg(msg, 2*time.Second)
			if err == nil && !strings.Contains(string(reply.Data), `"error"`) {
				t.Errorf("%s: a rollup on %s was stored: %s", w.name, subj, reply.Data)
			}
		}
		after, err := pods.List(ctx, bus.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Items) != len(before.Items) {
			t.Fatalf("%s: %d pods after its rollups, %d before", w.name, len(after.Items), len(before.Items))
		}
		st, err := js.Stream(ctx, "KV_hs_reconcile")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.GetLastMsgForSubject(ctx, "$KV.hs_reconcile.seed"); err != nil {
			t.Fatalf("%s: the retry records' seed after its rollups: %v", w.name, err)
		}
		if w.name == "node n1" {
			if _, err := leases.Get(ctx, "scheduler"); err != nil {
				t.Fatalf("the scheduler's lease after node n1's rollup: %v", err)
			}
		}
	}
}
