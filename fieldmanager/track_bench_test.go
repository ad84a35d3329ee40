package fieldmanager_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/homeostat/homeostat/object"
)

// BenchmarkTrackCreate: a controller's creates of pods, ten for each of
// owners never seen before, each owner's pods labelled for it, as
// ReplicaSets make them.
func BenchmarkTrackCreate(b *testing.B) {
	benchTrackCreates(b, 20000, func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-%[1]d-x","namespace":"default",
 "labels":{"app":"web-%[1]d","pod-template-hash":"h%[1]d"},
 "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-%[1]d","uid":"8d3c7a52-%[1]d","controller":true,"blockOwnerDeletion":true}]},
 "spec":{"containers":[{"name":"web","image":"nginx:1.27","command":["sleep","60"],"ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],
 "restartPolicy":"Always","terminationGracePeriodSeconds":30}}`, i/10)
	})
}

// BenchmarkTrackCreateOneOwner: one ReplicaSet's pods, as one Deployment
// of many replicas makes them.
func BenchmarkTrackCreateOneOwner(b *testing.B) {
	benchTrackCreates(b, 1000, func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-x-%d","namespace":"default",
 "labels":{"app":"web","pod-template-hash":"x"},
 "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-x","uid":"8d3c7a52","controller":true,"blockOwnerDeletion":true}]},
 "spec":{"containers":[{"name":"web","image":"nginx:1.27","command":["sleep","60"],"resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],
 "restartPolicy":"Always","terminationGracePeriodSeconds":30}}`, i)
	})
}

// benchTrackCreates times a controller's creates of n objects, the i-th
// from doc(i), over and over. Each write tracks a copy: Track fills in
// the object it is given, and one with managed fields already is not a
// create's.
func benchTrackCreates(b *testing.B, n int, doc func(i int) string) {
	m := managers(&testing.T{})
	objs := decodeAll(b, n, doc)
	for i := 0; b.Loop(); i++ {
		m.Track("homeostat-controllers", "", nil, objs[i%len(objs)].Clone())
	}
}

// decodeAll decodes n objects, the i-th from doc(i), and starts the
// benchmark's clock and allocation count after.
func decodeAll(b *testing.B, n int, doc func(i int) string) []*object.Object {
	b.Helper()
	objs := make([]*object.Object, n)
	for i := range objs {
		o, err := object.Decode([]byte(doc(i)))
		if err != nil {
			b.Fatal(err)
		}
		objs[i] = o
	}
	b.ReportAllocs()
	b.ResetTimer()
	return objs
}

// BenchmarkTrackRenew: a node's Lease renewed, its time moved.
func BenchmarkTrackRenew(b *testing.B) {
	m := managers(&testing.T{})
	live, err := object.Decode([]byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"n1","namespace":"kube-node-lease"},
 "spec":{"holderIdentity":"n1","leaseDurationSeconds":40,"renewTime":"2026-01-01T00:00:00.000000Z"}}`))
	if err != nil {
		b.Fatal(err)
	}
	live = m.Track("homeostat-nodeagent", "", nil, live)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		next := live.Clone()
		next.Spec = []byte(fmt.Sprintf(`{"holderIdentity":"n1","leaseDurationSeconds":40,"renewTime":"2026-01-01T00:%02d:%02d.%06dZ"}`, i/60%60, i%60, i))
		m.Track("homeostat-nodeagent", "", live, next)
	}
}

// BenchmarkTrackStatus: a Deployment's status written by its controller,
// its counts and its conditions' times moved, answered from memory as a
// thousand Deployments' are.
func BenchmarkTrackStatus(b *testing.B) {
	m := managers(&testing.T{})
	live, err := object.Decode([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","uid":"u1"},
 "spec":{"replicas":10,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
  "spec":{"containers":[{"name":"web","image":"nginx","command":["sleep","60"],"ports":[{"containerPort":80}]}]}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	live = m.Track("kubectl-client-side-apply", "", nil, live)
	status := func(i int) []byte {
		at := fmt.Sprintf("2026-01-01T00:%02d:%02dZ", i/60%60, i%60)
		return []byte(fmt.Sprintf(`{"observedGeneration":1,"replicas":10,"readyReplicas":%d,"conditions":[`+
			`{"type":"Available","status":"False","lastTransitionTime":"%s","lastUpdateTime":"%s","reason":"MinimumReplicasUnavailable","message":"Deployment does not have minimum availability."},`+
			`{"type":"Progressing","status":"True","lastTransitionTime":"%s","lastUpdateTime":"%s","reason":"ReplicaSetUpdated","message":"ReplicaSet \"web-%d\" is progressing."}]}`,
			i%9+1, at, at, at, at, i))
	}
	first := live.Clone()
	first.Status = status(0)
	live = m.Track("homeostat-controllers", "status", live, first)
	// Written long ago: every write below moves the controller's time.
	live.Metadata.ManagedFields = regexp.MustCompile(`"time":"[^"]*"`).ReplaceAll(live.Metadata.ManagedFields, []byte(`"time":"2020-01-01T00:00:00Z"`))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; b.Loop(); i++ {
		next := live.Clone()
		next.Status = status(i)
		m.Track("homeostat-controllers", "status", live, next)
	}
}
