package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// operatorBus starts an embedded server that trusts a new operator, with a
// control-plane connection and the node relay running.
func operatorBus(t testing.TB) (*bus.Operator, *bus.Conn) {
	t.Helper()
	op, err := bus.LoadOperator(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	creds, err := op.ControlPlaneCreds("test")
	if err != nil {
		t.Fatal(err)
	}
	server, err := bus.Connect(context.Background(), bus.Config{Name: "control", Creds: creds,
		Embedded: &bus.EmbeddedConfig{DataDir: t.TempDir(), Port: -1, Operator: op}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- server.ServeNodeRelay(ctx, slog.Default()) }()
	go func() { done <- server.ServeCollector(ctx, slog.Default()) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("relay: %v", err)
			}
		}
	})
	// The relay is listening once it answers a node at all.
	probeCreds, err := op.NodeCreds("probe")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := server.Join(context.Background(), bus.Config{Name: "probe", Creds: probeCreds, Node: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	w, err := probe.NodeWriter("probe")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the relay listening", 10*time.Second, func() bool {
		return !errors.Is(w.Remove(context.Background(), "default.none", "none"), bus.ErrUnavailable)
	})
	return op, server
}

// An embedded server with an operator accepts only credentials its account
// signed, and keeps accepting them after a restart over the same keys.
func TestEmbeddedServerRequiresCredentials(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	op, err := bus.LoadOperator(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := bus.LoadOperator(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mine, err := op.ControlPlaneCreds("mine")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.ControlPlaneCreds("stranger")
	if err != nil {
		t.Fatal(err)
	}
	if !op.Issued(mine) || op.Issued(stranger) || op.Issued([]byte("garbage")) {
		t.Fatal("Issued does not tell this operator's credentials from others'")
	}
	server, err := bus.Connect(ctx, bus.Config{Name: "server", Creds: mine,
		Embedded: &bus.EmbeddedConfig{DataDir: t.TempDir(), Port: -1, Operator: op}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	url := server.ClientURL()

	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a client without credentials was let in")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("a client without credentials: %v, want an authorization error", err)
	}
	if c, err := bus.Connect(ctx, bus.Config{URLs: url, Creds: stranger, Name: "stranger"}); err == nil {
		c.Close()
		t.Fatal("credentials of another operator were let in")
	}
	if _, err := bus.Connect(ctx, bus.Config{URLs: url, Creds: []byte("not credentials"), Name: "garbled"}); err == nil {
		t.Fatal("garbled credentials were taken")
	}
	again, err := bus.LoadOperator(dir)
	if err != nil {
		t.Fatal(err)
	}
	later, err := again.ControlPlaneCreds("later")
	if err != nil {
		t.Fatal(err)
	}
	c, err := bus.Connect(ctx, bus.Config{URLs: url, Creds: later, Name: "later"})
	if err != nil {
		t.Fatalf("credentials from the same keys, loaded again: %v", err)
	}
	c.Close()
}

// protected are objects of other owners that node n1 must not change.
type protected struct {
	store *bus.Store
	key   string
}

// A node agent's credentials let it do its work (open the stores, write its
// own Node and heartbeat, write its own pod's status through the relay),
// and nothing else: a raw NATS client holding them cannot change another
// node's Node, lease or pods, its own pods directly, or any Deployment,
// ReplicaSet or RBAC object, by publishing, through the JetStream API, or
// by making a stream deliver into a subject someone listens on.
func TestNodeCredentialsAreConfined(t *testing.T) {
	ctx := context.Background()
	op, server := operatorBus(t)
	stores := seedOwners(t, server)
	leases, err := server.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Acquire(ctx, bus.NodeLeaseKey("n2"), "agent-n2", time.Minute); err != nil {
		t.Fatal(err)
	}

	creds, err := op.NodeCreds("n1")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := bus.Connect(ctx, bus.Config{URLs: server.ClientURL(), Creds: creds, Node: "n1", Name: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Close)
	nodeAgentDoesItsWork(t, server, agent)

	protect := []protected{
		{stores["nodes"], "n2"}, {stores["pods"], "default.theirs"}, {stores["pods"], "default.mine"},
		{stores["deployments.apps"], "default.d"}, {stores["replicasets.apps"], "default.rs"},
		{stores["roles.rbac.authorization.k8s.io"], "default.r"},
		{stores["clusterrolebindings.rbac.authorization.k8s.io"], "crb"},
	}
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, p := range protect {
			o, err := p.store.Get(ctx, p.key)
			if err != nil {
				t.Fatalf("%s %s: %v", p.store.Resource(), p.key, err)
			}
			out[p.store.Resource()+"/"+p.key] = o.Metadata.ResourceVersion + " " + string(o.Spec)
		}
		l, err := leases.Get(ctx, bus.NodeLeaseKey("n2"))
		if err != nil {
			t.Fatal(err)
		}
		out["lease n2"] = l.Holder
		return out
	}
	before := snapshot()

	attackAsNode1(t, server.ClientURL(), creds)
	if got := snapshot(); !sameMap(got, before) {
		t.Fatalf("node n1's raw client changed objects it does not own:\nbefore %v\nafter  %v", before, got)
	}
}

// attackAsNode1 tries, with a raw NATS client holding node n1's
// credentials, every write n1 must not make, and waits for the server to
// refuse each.
func attackAsNode1(t *testing.T, url string, creds []byte) {
	t.Helper()
	violations := make(chan error, 64)
	raw := bus.RawConnForTest(t, url, creds, func(err error) { violations <- err },
		nats.CustomInboxPrefix("_INBOX_n1"))
	forged := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"nodeName":"n1"}}`)
	refused := []string{
		"$KV.hs_nodes.n2", "$KV.hs_leases.node.n2", "$KV.hs_leases.node.n1", "$KV.hs_leases.scheduler", "$KV.hs_pods.default.theirs", "$KV.hs_pods.default.mine",
		"$KV.hs_deployments_apps.default.d", "$KV.hs_replicasets_apps.default.rs",
		"$KV.hs_roles_rbac_authorization_k8s_io.default.r", "$KV.hs_clusterrolebindings_rbac_authorization_k8s_io.crb",
		"$JS.API.STREAM.CREATE.EVIL", "$JS.API.STREAM.UPDATE.KV_hs_pods", "$JS.API.STREAM.DELETE.KV_hs_deployments_apps",
		"$JS.API.STREAM.PURGE.KV_hs_pods", "$JS.API.STREAM.MSG.DELETE.KV_hs_pods",
		"$JS.API.CONSUMER.DURABLE.CREATE.KV_hs_pods.evil", "$JS.API.CONSUMER.CREATE.WQ_deployments.evil",
		"$JS.ACK.WQ_deployments.x.1.1.1.1.0", "hs.relay.n2.pods", "hs.relay.n2.heartbeat",
		"$KV.hs_leases_coordination_k8s_io.kube-node-lease.n2", "$KV.hs_leases_coordination_k8s_io.default.leader",
		// Nor may it read what an agent has no use for: RBAC, tokens, audit,
		// and Secrets, which it gets through the relay, for its own pods.
		"$JS.API.DIRECT.GET.KV_hs_secrets", "$JS.API.STREAM.MSG.GET.KV_hs_secrets", "$JS.API.CONSUMER.CREATE.KV_hs_secrets.x",
		"$JS.API.DIRECT.GET.KV_hs_roles_rbac_authorization_k8s_io", "$JS.API.STREAM.MSG.GET.KV_hs_serviceaccounts",
		"$JS.API.CONSUMER.CREATE.HS_AUDIT.x", "$JS.API.STREAM.INFO.HS_AUDIT",
		"$JS.API.STREAM.MSG.GET.KV_hs_leases", "$JS.API.CONSUMER.CREATE.KV_hs_leases.x",
	}
	for _, subj := range refused {
		if err := raw.Publish(subj, forged); err != nil {
			t.Fatal(err)
		}
	}
	// A push consumer delivering into another's pod: the server lets the
	// node make it on a stream it reads, but not listen where it delivers,
	// so nothing flows.
	jsRequest(t, raw, "$JS.API.CONSUMER.CREATE.KV_hs_nodes.evil.$KV.hs_nodes.n1", `{"stream_name":"KV_hs_nodes","config":`+
		`{"name":"evil","deliver_subject":"$KV.hs_pods.default.theirs","ack_policy":"none","filter_subject":"$KV.hs_nodes.n1"}}`)
	if _, err := raw.Subscribe("$KV.hs_pods.default.theirs", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	// Its own Node holding a forged relay request, for a consumer to
	// deliver to the relay as though node n2 had sent it: the server does
	// not deliver it (the relay's subscription does not count as interest
	// for it, measured), and the relay would drop it anyway
	// (TestRelayAnswersOnlyTheNode).
	jsRequest(t, raw, "$KV.hs_nodes.n1", `{"op":"status","pod":{"apiVersion":"v1","kind":"Pod",`+
		`"metadata":{"namespace":"default","name":"theirs"},"status":{"phase":"Failed"}}}`)
	jsRequest(t, raw, "$JS.API.CONSUMER.CREATE.KV_hs_nodes.relay.$KV.hs_nodes.n1", `{"stream_name":"KV_hs_nodes","config":`+
		`{"name":"relay","deliver_subject":"hs.relay.n2.pods","deliver_group":"homeostat-relay","ack_policy":"none","filter_subject":"$KV.hs_nodes.n1"}}`)
	want := []string{`subscription to "$KV.hs_pods.default.theirs"`}
	for _, subj := range refused {
		want = append(want, `publish to "`+subj+`"`)
	}
	awaitRefusals(t, violations, want)
}

// seedOwners stores what belongs to others than node n1: nodes n1 and n2,
// a pod on each, a Deployment, a ReplicaSet, a Role and a
// ClusterRoleBinding. It returns the stores by resource.
func seedOwners(t *testing.T, server *bus.Conn) map[string]*bus.Store {
	t.Helper()
	ctx := context.Background()
	stores := map[string]*bus.Store{}
	for _, s := range []bus.StoreSpec{
		{Resource: "pods", Kind: "Pod", Namespaced: true}, {Resource: "nodes", Kind: "Node"},
		{Resource: "deployments.apps", Kind: "Deployment", Namespaced: true},
		{Resource: "replicasets.apps", Kind: "ReplicaSet", Namespaced: true},
		{Resource: "roles.rbac.authorization.k8s.io", Kind: "Role", Namespaced: true},
		{Resource: "clusterrolebindings.rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
		{Resource: "secrets", Kind: "Secret", Namespaced: true},
		{Resource: "leases.coordination.k8s.io", Kind: "Lease", Namespaced: true},
	} {
		st, err := server.Store(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		stores[s.Resource] = st
	}
	for _, o := range []struct {
		resource, apiVersion, kind, ns, name string
		spec                                 map[string]any
	}{
		{"nodes", "v1", "Node", "", "n1", nil},
		{"nodes", "v1", "Node", "", "n2", nil},
		{"pods", "v1", "Pod", "default", "mine", map[string]any{"nodeName": "n1", "volumes": secretVolume}},
		{"pods", "v1", "Pod", "default", "theirs", map[string]any{"nodeName": "n2", "volumes": secretVolume}},
		{"deployments.apps", "apps/v1", "Deployment", "default", "d", map[string]any{"replicas": 1}},
		{"replicasets.apps", "apps/v1", "ReplicaSet", "default", "rs", map[string]any{"replicas": 1}},
		{"roles.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1", "Role", "default", "r", nil},
		{"clusterrolebindings.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "crb", nil},
	} {
		obj := &object.Object{APIVersion: o.apiVersion, Kind: o.kind, Metadata: object.Meta{Namespace: o.ns, Name: o.name}}
		if o.spec != nil {
			if err := obj.SetSpec(o.spec); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := stores[o.resource].Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"s", "unused"} {
		sec := &object.Object{APIVersion: "v1", Kind: "Secret", Metadata: object.Meta{Namespace: "default", Name: name}}
		if err := sec.SetField("data", map[string]string{"k": "dg=="}); err != nil {
			t.Fatal(err)
		}
		if _, err := stores["secrets"].Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	return stores
}

// secretVolume makes a pod refer to Secret s.
var secretVolume = []any{map[string]any{"name": "v", "secret": map[string]any{"secretName": "s"}}}

// nodeAgentDoesItsWork checks that node n1's credentials suffice for its
// agent's work, and that the relay refuses what is not n1's.
func nodeAgentDoesItsWork(t *testing.T, server, agent *bus.Conn) {
	t.Helper()
	ctx := context.Background()
	pods, err := agent.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatalf("a node opening the pods: %v", err)
	}
	nodes, err := agent.Store(ctx, bus.StoreSpec{Resource: "nodes", Kind: "Node"})
	if err != nil {
		t.Fatalf("a node opening the nodes: %v", err)
	}
	n1, err := nodes.Get(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	n1.Metadata.Labels = map[string]string{"ready": "yes"}
	if _, err := nodes.Update(ctx, n1, bus.UpdateOptions{Current: n1}); err != nil {
		t.Fatalf("a node updating its own Node: %v", err)
	}
	nodeKeepsItsHeartbeat(t, server, agent)
	leaseObjects, err := agent.Store(ctx, bus.StoreSpec{Resource: "leases.coordination.k8s.io", Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatalf("a node opening the Lease objects: %v", err)
	}
	own := &object.Object{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Metadata: object.Meta{Namespace: "kube-node-lease", Name: "n1"}}
	if _, err := leaseObjects.Create(ctx, own); err != nil {
		t.Fatalf("a node writing its own Lease object: %v", err)
	}
	if _, err := leaseObjects.Get(ctx, "kube-node-lease.n1"); err != nil {
		t.Fatalf("a node reading its own Lease object back: %v", err)
	}
	// Its proxy follows every Service and EndpointSlice (the control
	// plane has made their buckets).
	for _, spec := range []bus.StoreSpec{{Resource: "services", Kind: "Service", Namespaced: true},
		{Resource: "endpointslices.discovery.k8s.io", Kind: "EndpointSlice", Namespaced: true}} {
		if _, err := server.Store(ctx, spec); err != nil {
			t.Fatal(err)
		}
		st, err := agent.Store(ctx, spec)
		if err != nil {
			t.Fatalf("a node opening the %s: %v", spec.Resource, err)
		}
		if _, err := st.List(ctx, bus.ListOptions{}); err != nil {
			t.Fatalf("a node listing the %s: %v", spec.Resource, err)
		}
		wctx, cancel := context.WithCancel(ctx)
		if _, err := st.Watch(wctx, bus.WatchOptions{}); err != nil {
			t.Fatalf("a node watching the %s: %v", spec.Resource, err)
		}
		cancel()
	}
	w, err := agent.NodeWriter("n1")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"default.mine", "default.theirs"} {
		p, err := pods.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		n := p.Clone()
		if err := n.SetStatus(map[string]any{"phase": "Running"}); err != nil {
			t.Fatal(err)
		}
		n.Spec = []byte(`{"nodeName":"n1","evil":true}`)
		updated, err := w.UpdateStatus(ctx, n, p)
		switch {
		case key == "default.mine" && err != nil:
			t.Fatalf("writing its own pod's status through the relay: %v", err)
		case key == "default.mine" && (!strings.Contains(string(updated.Status), "Running") || strings.Contains(string(updated.Spec), "evil")):
			t.Fatalf("the relay wrote %s / %s, want the status alone", updated.Spec, updated.Status)
		case key == "default.theirs" && !errors.Is(err, bus.ErrForbidden):
			t.Fatalf("writing another node's pod's status through the relay: %v, want forbidden", err)
		}
		if err := w.Remove(ctx, key, p.Metadata.UID); !errors.Is(err, bus.ErrForbidden) {
			t.Fatalf("removing %s, not being deleted: %v, want forbidden", key, err)
		}
		cfg, err := w.PodConfig(ctx, p)
		switch {
		case key == "default.mine" && (err != nil || len(cfg.Secrets) != 1 || cfg.Secrets["s"] == nil):
			t.Fatalf("its own pod's Secrets through the relay: %v %+v, want s alone", err, cfg)
		case key == "default.theirs" && !errors.Is(err, bus.ErrForbidden):
			t.Fatalf("another node's pod's Secrets through the relay: %v, want forbidden", err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := agent.Store(short, bus.StoreSpec{Resource: "gadgets.example.com", Kind: "Gadget", Namespaced: true}); err == nil {
		t.Fatal("a node created a bucket")
	}
}

// The relay answers a request on a node's subject only when it comes from
// that node's inbox: a message a stream delivers there, with an
// acknowledgement subject for its reply, or one that would answer another
// node, is dropped unread.
func TestRelayAnswersOnlyTheNode(t *testing.T) {
	ctx := context.Background()
	_, server := operatorBus(t)
	pods, err := server.Store(ctx, bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Namespace: "default", Name: "p"}}
	if err := o.SetSpec(map[string]any{"nodeName": "n2"}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Create(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	n := p.Clone()
	if err := n.SetStatus(map[string]any{"phase": "Failed"}); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"op": "status", "pod": n})
	if err != nil {
		t.Fatal(err)
	}
	dropped := bus.RelayRefusals("dropped")
	bus.PublishRawForTest(t, server, "hs.relay.n2.pods", "_INBOX_n1.stolen", body)
	poll.Until(t, "the relay to drop the delivered request", 10*time.Second, func() bool { return bus.RelayRefusals("dropped") > dropped })
	if got, err := pods.Get(ctx, "default.p"); err != nil || got.Metadata.ResourceVersion != p.Metadata.ResourceVersion {
		t.Fatalf("pod after the delivered request: %v, %v; want it untouched", got, err)
	}
}

// jsRequest makes a request that the server must answer without an error.
func jsRequest(t *testing.T, nc *nats.Conn, subject, body string) {
	t.Helper()
	m, err := nc.Request(subject, []byte(body), 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	if strings.Contains(string(m.Data), `"error"`) {
		t.Fatalf("%s: %s", subject, m.Data)
	}
}

// awaitRefusals waits for the server to refuse each of what (as in its
// errors: publish to "SUBJECT", subscription to "SUBJECT").
func awaitRefusals(t *testing.T, violations <-chan error, what []string) {
	t.Helper()
	want := map[string]bool{}
	for _, s := range what {
		want[strings.ToLower(s)] = true
	}
	deadline := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case err := <-violations:
			msg := strings.ToLower(err.Error())
			if !strings.Contains(msg, "permissions violation") {
				t.Fatalf("unexpected error: %v", err)
			}
			for s := range want {
				if strings.Contains(msg, s) {
					delete(want, s)
				}
			}
		case <-deadline:
			t.Fatalf("not refused by the server: %v", want)
		}
	}
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A data directory made before the server asked for credentials keeps its
// objects when it starts again with an operator.
func TestOperatorAdoptsAnUnauthenticatedStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(op *bus.Operator, creds []byte) *bus.Conn {
		t.Helper()
		c, err := bus.Connect(ctx, bus.Config{Name: "adopt", Creds: creds, Embedded: &bus.EmbeddedConfig{DataDir: dir, Port: -1, Operator: op}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := open(nil, nil)
	nodes, err := before.Store(ctx, bus.StoreSpec{Resource: "nodes", Kind: "Node"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Create(ctx, &object.Object{APIVersion: "v1", Kind: "Node", Metadata: object.Meta{Name: "kept"}}); err != nil {
		t.Fatal(err)
	}
	before.Close()

	op, err := bus.LoadOperator(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	creds, err := op.ControlPlaneCreds("adopt")
	if err != nil {
		t.Fatal(err)
	}
	after := open(op, creds)
	defer after.Close()
	nodes, err = after.Store(ctx, bus.StoreSpec{Resource: "nodes", Kind: "Node"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Get(ctx, "kept"); err != nil {
		t.Fatalf("the object stored before credentials: %v", err)
	}
}
