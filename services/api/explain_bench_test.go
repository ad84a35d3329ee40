package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/services/api"
)

// seedBigDeployment stores a Deployment of pods replicas, its ReplicaSet,
// the pods (a third unschedulable, the rest running on nodes nodes, each
// with a Scheduled event) and some history, as the controllers, the
// scheduler and the agents would have left them.
func seedBigDeployment(b *testing.B, conn *bus.Conn, pods, nodes int) {
	ctx := context.Background()
	store := func(resource, kind string, namespaced bool) *bus.Store {
		st, err := conn.Store(ctx, bus.StoreSpec{Resource: resource, Kind: kind, Namespaced: namespaced})
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	mustCreate := func(st *bus.Store, doc string) *object.Object {
		o, err := object.Decode([]byte(doc))
		if err != nil {
			b.Fatalf("%v: %s", err, doc)
		}
		if o, err = st.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
		return o
	}
	pending := pods / 3
	d := mustCreate(store("deployments.apps", "Deployment", true), fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"big","namespace":"default"},
	  "spec":{"replicas":%d,"selector":{"matchLabels":{"app":"big"}},"template":{"metadata":{"labels":{"app":"big"}},"spec":{"containers":[{"name":"web","command":["sleep","1"],"resources":{"requests":{"cpu":"1"}}}]}}},
	  "status":{"observedGeneration":1,"replicas":%d,"updatedReplicas":%[1]d,"readyReplicas":%d,"availableReplicas":%[3]d,"unavailableReplicas":%d}}`,
		pods, pods, pods-pending, pending))
	rs := mustCreate(store("replicasets.apps", "ReplicaSet", true), fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"big-7d9f","namespace":"default",
	  "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"big","uid":%q,"controller":true}]},
	  "spec":{"replicas":%d,"selector":{"matchLabels":{"app":"big"}},"template":{"spec":{"containers":[{"name":"web","command":["sleep","1"]}]}}},
	  "status":{"observedGeneration":1,"replicas":%d,"readyReplicas":%d,"availableReplicas":%[4]d}}`, d.Metadata.UID, pods, pods, pods-pending))
	nodeStore := store("nodes", "Node", false)
	for i := range nodes {
		mustCreate(nodeStore, fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n%d"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, i))
	}
	var objs []*object.Object
	for i := range pods {
		status := `"phase":"Running","conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"web","ready":true,"state":{"running":{}}}]`
		spec := fmt.Sprintf(`"nodeName":"n%d",`, i%nodes)
		if i < pending {
			spec, status = "", `"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/10 nodes are available: 10 Insufficient cpu."}]`
		}
		o, err := object.Decode(fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big-7d9f-%d","namespace":"default","labels":{"app":"big"},
		  "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"big-7d9f","uid":%q,"controller":true}]},
		  "spec":{%s"containers":[{"name":"web","command":["sleep","1"],"resources":{"requests":{"cpu":"1"}}}]},"status":{%s}}`, i, rs.Metadata.UID, spec, status))
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, o)
	}
	created, errs := store("pods", "Pod", true).CreateMany(ctx, objs, bus.CreateOptions{})
	events := store("events", "Event", true)
	var evs []*object.Object
	for i, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
		ev, _ := object.Decode(fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"big-7d9f-%d-e","namespace":"default"},
		  "involvedObject":{"kind":"Pod","name":%q,"namespace":"default","uid":%q},"reason":"Scheduled","type":"Normal","message":"assigned","count":1}`,
			i, created[i].Metadata.Name, created[i].Metadata.UID))
		evs = append(evs, ev)
	}
	if _, errs := events.CreateMany(ctx, evs, bus.CreateOptions{}); errs[0] != nil {
		b.Fatal(errs[0])
	}
	h, err := conn.History(ctx, bus.HistoryOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		for _, o := range []struct{ res, key, ctrl string }{{"deployments.apps", "default.big", "deployment"}, {"replicasets.apps", "default.big-7d9f", "replicaset"}} {
			e, _ := json.Marshal(reconcile.HistoryEntry{Time: time.Now().Add(-time.Duration(50-i) * time.Second), Controller: o.ctrl, Key: o.key,
				Outcome: reconcile.OutcomeChanged, DurationMS: 2})
			if err := h.Append(o.res, o.key, e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkExplain: explain of a Deployment of 1,000 pods (a third of
// them unschedulable) on 10 nodes, through the API over HTTPS, one
// request after another; it reports the median and the 99th percentile.
func BenchmarkExplain(b *testing.B) {
	conn := bustest.Conn(b)
	base := startAPI(b, conn, func(cfg *api.Config) {
		cfg.Controllers = map[string][]string{"deployments.apps": {"deployment"}, "replicasets.apps": {"replicaset"}}
	})
	seedBigDeployment(b, conn, 1000, 10)
	url := base + "/apis/apps/v1/namespaces/default/deployments/big/explain"
	get := func() time.Duration {
		start := time.Now()
		resp, err := admin(b).Get(url)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%d %s", resp.StatusCode, body)
		}
		return time.Since(start)
	}
	for range 5 {
		get() // warm the connection and the caches
	}
	b.ResetTimer()
	var took []time.Duration
	for b.Loop() {
		took = append(took, get())
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	at := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(q*float64(len(took))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
