package fieldmanager

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

func decodeEntries(t *testing.T, o *object.Object) []metav1.ManagedFieldsEntry {
	t.Helper()
	var es []metav1.ManagedFieldsEntry
	if err := json.Unmarshal(o.Metadata.ManagedFields, &es); err != nil {
		t.Fatal(err)
	}
	return es
}

// aged sets every managed fields entry of o to have been written at at,
// as if its writes had been far apart.
func aged(t *testing.T, o *object.Object, at time.Time) *object.Object {
	t.Helper()
	es := decodeEntries(t, o)
	for i := range es {
		mt := metav1.NewTime(at)
		es[i].Time = &mt
	}
	o = o.Clone()
	b, err := json.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	o.Metadata.ManagedFields = b
	return o
}

// TestStatusAnswersAreTheFieldManagers: a status write recorded from a
// remembered answer gets the managed fields the field manager itself
// gives — owners, fields, each entry's time and their order — for two
// ReplicaSets alike but for their names and the times of their writes,
// through status fields added, changed, removed and taken by another
// writer; and the second ReplicaSet's writes are answered from memory.
func TestStatusAnswersAreTheFieldManagers(t *testing.T) {
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	m := New(openapi.NewCache(reg))
	rs := func(name string) *object.Object {
		o, err := object.Decode([]byte(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"` + name + `","namespace":"default","uid":"uid-` + name + `"},
 "spec":{"replicas":10,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","command":["sleep","60"]}]}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m.Track("homeostat-controllers", "", nil, o)
	}
	steps := []struct{ manager, status string }{
		{"homeostat-controllers", `{"replicas":10}`},
		{"homeostat-controllers", `{"replicas":10,"readyReplicas":3}`},
		{"homeostat-controllers", `{"replicas":10,"readyReplicas":3,"availableReplicas":3,"conditions":[{"type":"ReplicaFailure","status":"True","reason":"x"}]}`},
		{"someone-else", `{"replicas":10,"readyReplicas":4,"availableReplicas":3,"conditions":[{"type":"ReplicaFailure","status":"True","reason":"x"}]}`},
		{"homeostat-controllers", `{"replicas":10,"readyReplicas":5,"availableReplicas":5}`},
		{"homeostat-controllers", `{"replicas":10}`},
	}
	objects := map[string]*object.Object{"a": rs("a"), "b": rs("b")}
	epochs := map[string]time.Time{"a": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), "b": time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)}
	hits := 0
	for i, step := range steps {
		for _, name := range []string{"a", "b"} {
			live := aged(t, objects[name], epochs[name].Add(time.Duration(i)*time.Hour))
			next := live.Clone()
			next.Status = json.RawMessage(step.status)
			before := decodeEntries(t, live)
			if key, ok := statusKey(step.manager, live, next, before); ok && name == "b" {
				if _, ok := m.statuses.get(key); ok {
					hits++
				} else {
					t.Logf("step %d: the second ReplicaSet's write not answered from memory", i)
				}
			}
			want := decodeEntries(t, m.Update(step.manager, "status", live, next.Clone()))
			got := m.Track(step.manager, "status", live, next.Clone())
			gotEntries := decodeEntries(t, got)
			if len(gotEntries) != len(want) {
				t.Fatalf("step %d, %s: %d entries, want %d:\n%s", i, name, len(gotEntries), len(want), got.Metadata.ManagedFields)
			}
			if !slices.IsSortedFunc(gotEntries, compareEntries) {
				t.Fatalf("step %d, %s: entries out of the field manager's order:\n%s", i, name, got.Metadata.ManagedFields)
			}
			for _, w := range want {
				j := slices.IndexFunc(gotEntries, func(g metav1.ManagedFieldsEntry) bool { return identityOf(g) == identityOf(w) })
				if j < 0 {
					t.Fatalf("step %d, %s: no entry of %+v", i, name, identityOf(w))
				}
				g := gotEntries[j]
				if !object.SameJSON(g.FieldsV1.Raw, w.FieldsV1.Raw) {
					t.Fatalf("step %d, %s: %s owns %s, want %s", i, name, g.Manager, g.FieldsV1.Raw, w.FieldsV1.Raw)
				}
				// The two answers were made a moment apart.
				if d := g.Time.Sub(w.Time.Time); d < -time.Second || d > time.Second {
					t.Fatalf("step %d, %s: %+v written at %s, want %s", i, name, identityOf(w), g.Time, w.Time)
				}
			}
			objects[name] = got
		}
	}
	if hits != len(steps) {
		t.Fatalf("%d of the second ReplicaSet's %d status writes answered from memory", hits, len(steps))
	}
}
