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

// TestRememberedAnswersAreTheFieldManagers: an update recorded from a
// remembered answer gets the managed fields the field manager itself
// gives — owners, fields, each entry's time and their order — for two
// ReplicaSets alike but for their names and the times of their writes,
// through status fields added, changed, removed and taken by another
// writer, annotations written with the status, and a list of the spec
// changed by key; and the second ReplicaSet's writes are answered from
// memory.
func TestRememberedAnswersAreTheFieldManagers(t *testing.T) {
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
	status := func(s string) func(o *object.Object) { return func(o *object.Object) { o.Status = json.RawMessage(s) } }
	steps := []struct {
		manager, sub string
		change       func(o *object.Object)
	}{
		{"homeostat-controllers", "status", status(`{"replicas":10}`)},
		{"homeostat-controllers", "status", status(`{"replicas":10,"readyReplicas":3}`)},
		{"homeostat-controllers", "", func(o *object.Object) {
			o.Metadata.Annotations = map[string]string{"replicaset.homeostat.io/settled": "1"}
			o.Status = json.RawMessage(`{"replicas":10,"readyReplicas":3,"availableReplicas":3,"conditions":[{"type":"ReplicaFailure","status":"True","reason":"x"}]}`)
		}},
		{"someone-else", "status", status(`{"replicas":10,"readyReplicas":4,"availableReplicas":3,"conditions":[{"type":"ReplicaFailure","status":"True","reason":"x"}]}`)},
		{"homeostat-controllers", "status", status(`{"replicas":10,"readyReplicas":5,"availableReplicas":5}`)},
		{"someone-else", "", func(o *object.Object) {
			o.Spec = json.RawMessage(`{"replicas":10,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","command":["sleep","60"]},{"name":"side","command":["sleep","1"]}]}}}`)
		}},
		{"homeostat-controllers", "", func(o *object.Object) {
			o.Spec = json.RawMessage(`{"replicas":10,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"side","command":["sleep","2"]}]}}}`)
			o.Metadata.Generation++
		}},
		{"homeostat-controllers", "status", status(`{"replicas":10}`)},
	}
	objects := map[string]*object.Object{"a": rs("a"), "b": rs("b")}
	epochs := map[string]time.Time{"a": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), "b": time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)}
	hits := 0
	for i, step := range steps {
		for _, name := range []string{"a", "b"} {
			live := aged(t, objects[name], epochs[name].Add(time.Duration(i)*time.Hour))
			next := live.Clone()
			step.change(next)
			before := decodeEntries(t, live)
			if key, ok := updateKey(step.manager, step.sub, live, next, before); ok && name == "b" {
				if _, ok := m.updates.get(key); ok {
					hits++
				} else {
					t.Logf("step %d: the second ReplicaSet's write not answered from memory", i)
				}
			}
			want := decodeEntries(t, m.Update(step.manager, step.sub, live, next.Clone()))
			got := m.Track(step.manager, step.sub, live, next.Clone())
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
		t.Fatalf("%d of the second ReplicaSet's %d writes answered from memory", hits, len(steps))
	}
	// A third, whose first write changes other fields than the first
	// two's did, is not answered with theirs.
	live := aged(t, rs("c"), epochs["a"])
	next := live.Clone()
	next.Status = json.RawMessage(`{"readyReplicas":1}`)
	got := decodeEntries(t, m.Track("homeostat-controllers", "status", live, next.Clone()))
	want := decodeEntries(t, m.Update("homeostat-controllers", "status", live, next.Clone()))
	for _, w := range want {
		j := slices.IndexFunc(got, func(g metav1.ManagedFieldsEntry) bool { return identityOf(g) == identityOf(w) })
		if j < 0 || !object.SameJSON(got[j].FieldsV1.Raw, w.FieldsV1.Raw) {
			t.Fatalf("another change was answered as the first: %+v, want %+v", got, want)
		}
	}
}
