package fieldmanager

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homeostat/homeostat/object"
)

func decodeEntries(t *testing.T, o *object.Object) []metav1.ManagedFieldsEntry {
	t.Helper()
	var es []metav1.ManagedFieldsEntry
	if err := json.Unmarshal(o.Metadata.ManagedFields, &es); err != nil {
		t.Fatal(err)
	}
	return es
}

// keyOf is the key of an update of parts over the entries before, their
// fields decoded as the update decodes them.
func keyOf(t *testing.T, root place, manager, sub string, next *object.Object, before []metav1.ManagedFieldsEntry, parts []object.Part) ([32]byte, bool) {
	t.Helper()
	fields := make([]fieldSet, len(before))
	for i, e := range before {
		var ok bool
		if fields[i], ok = decodeFields(e); !ok {
			t.Fatalf("entry %d: fields do not decode", i)
		}
	}
	return updateKey(root, manager, sub, next, before, fields, parts, pathsOf(parts))
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
// ReplicaSets alike but for their names, their owners (whose uids their
// managed fields name) and the times of their writes,
// through status fields added, changed, removed and taken by another
// writer, annotations written with the status, and a list of the spec
// changed by key; and the second ReplicaSet's writes are answered from
// memory.
func TestRememberedAnswersAreTheFieldManagers(t *testing.T) {
	m := builtinManagers(t)
	rs := func(name string) *object.Object {
		o, err := object.Decode([]byte(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"` + name + `","namespace":"default","uid":"uid-` + name + `",
 "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d-` + name + `","uid":"owner-` + name + `","controller":true}]},
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
			if key, ok := keyOf(t, m.root(next.APIVersion, next.Kind), step.manager, step.sub, next, before, object.Differing(live, next)); ok && name == "b" {
				if _, ok := m.updates.get(key); ok {
					hits++
				} else {
					t.Logf("step %d: the second ReplicaSet's write not answered from memory", i)
				}
			}
			want := decodeEntries(t, m.Update(step.manager, step.sub, live, next.Clone()))
			got := m.Track(step.manager, step.sub, live, next.Clone())
			gotEntries := decodeEntries(t, got)
			var v []any
			if err := json.Unmarshal(got.Metadata.ManagedFields, &v); err != nil {
				t.Fatal(err)
			}
			if sorted, _ := json.Marshal(v); string(sorted) != string(got.Metadata.ManagedFields) {
				t.Fatalf("step %d, %s: managed fields not encoded as the field manager's are:\n%s", i, name, got.Metadata.ManagedFields)
			}
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
	// Two more write twice within the second, as controllers do: the
	// first's second write, new, is answered by the field manager and
	// remembered (it changes a field, so the writer's entry took the
	// present), the other's from memory.
	for i, name := range []string{"f", "g"} {
		cur := rs(name)
		for _, st := range []string{`{"replicas":10}`, `{"replicas":7,"readyReplicas":2}`} {
			next := cur.Clone()
			next.Status = json.RawMessage(st)
			before := decodeEntries(t, cur)
			key, _ := keyOf(t, m.root(next.APIVersion, next.Kind), "homeostat-controllers", "status", next, before, object.Differing(cur, next))
			_, remembered := m.updates.get(key)
			want := decodeEntries(t, m.Update("homeostat-controllers", "status", cur, next.Clone()))
			got := m.Track("homeostat-controllers", "status", cur, next.Clone())
			gotEntries := decodeEntries(t, got)
			for _, w := range want {
				j := slices.IndexFunc(gotEntries, func(g metav1.ManagedFieldsEntry) bool { return identityOf(g) == identityOf(w) })
				if j < 0 || !object.SameJSON(gotEntries[j].FieldsV1.Raw, w.FieldsV1.Raw) {
					t.Fatalf("%s, status %s: %+v, want %+v", name, st, gotEntries, want)
				}
				if d := gotEntries[j].Time.Sub(w.Time.Time); d < -time.Second || d > time.Second {
					t.Fatalf("%s, status %s: %+v written at %s, want %s", name, st, identityOf(w), gotEntries[j].Time, w.Time)
				}
			}
			if i == 1 && !remembered {
				t.Fatalf("%s, status %s: not answered from memory", name, st)
			}
			cur = got
		}
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

// TestChangesFields: an update surely changes a recorded field when, in
// objects alone, it adds or changes a value; not for a removal, a list,
// a null, or a member the field manager does not record.
func TestChangesFields(t *testing.T) {
	part := func(name, live, next string) object.Part {
		return object.Part{Name: name, Live: []byte(live), Next: []byte(next)}
	}
	for _, tc := range []struct {
		name  string
		parts []object.Part
		want  bool
	}{
		{"a value changed", []object.Part{part("status", `{"a":1}`, `{"a":2}`)}, true},
		{"a value added", []object.Part{part("status", `{"a":1}`, `{"a":1,"b":{"c":"x"}}`)}, true},
		{"from none", []object.Part{part("status", ``, `{"a":1}`)}, true},
		{"a value removed", []object.Part{part("status", `{"a":1,"b":2}`, `{"a":1}`)}, false},
		{"a list changed", []object.Part{part("status", `{"l":[{"k":"1"},{"k":"2"}]}`, `{"l":[{"k":"1"}]}`)}, false},
		{"an empty map added", []object.Part{part("status", `{}`, `{"m":{}}`)}, false},
		{"a null added", []object.Part{part("status", `{}`, `{"m":null}`)}, false},
		{"an unrecorded member", []object.Part{part("metadata.generation", `1`, `2`)}, false},
		{"an annotation", []object.Part{part("metadata.generation", `1`, `2`), part("metadata.annotations", `null`, `{"a":"b"}`)}, true},
	} {
		if got := changesFields(tc.parts); got != tc.want {
			t.Errorf("%s: changesFields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFieldSetCutAndPut: a subtree taken out leaves no empty map above
// it, and put back, the fields are as they were.
func TestFieldSetCutAndPut(t *testing.T) {
	raw := `{"f:metadata":{"f:annotations":{"f:a":{}},"f:ownerReferences":{"k:{\"uid\":\"u\"}":{}}},"f:status":{"f:replicas":{}}}`
	var fs fieldSet
	if err := json.Unmarshal([]byte(raw), &fs); err != nil {
		t.Fatal(err)
	}
	paths := [][]string{fieldsPath("metadata.annotations"), fieldsPath("status"), fieldsPath("spec")}
	out := fs.outside(paths)
	if b, _ := json.Marshal(out); string(b) != `{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u\"}":{}}}}` {
		t.Fatalf("outside: %s", b)
	}
	for _, p := range paths {
		if v, ok := fs.at(p); ok {
			out.put(p, v)
		}
	}
	if !reflect.DeepEqual(out, fs) {
		t.Fatalf("put back: %v, want %v", out, fs)
	}
	only := fieldSet{"f:status": map[string]any{"f:replicas": map[string]any{}}}
	if o := only.outside(paths); len(o) != 0 {
		t.Fatalf("nothing is left outside, yet %v", o)
	}
	for part, want := range map[string]string{"metadata.generation": "[]", "metadata.labels": "[f:metadata f:labels]", "fields.rules": "[f:rules]", "status": "[f:status]"} {
		if got := fmt.Sprint(fieldsPath(part)); got != want {
			t.Errorf("fieldsPath(%s) = %s, want %s", part, got, want)
		}
	}
}

// TestFailedUpdatesAreNotRemembered: an update the field manager cannot
// type (a spec the schema refuses) records nothing, and the same change
// to a sound object is then answered by the field manager, not by that.
func TestFailedUpdatesAreNotRemembered(t *testing.T) {
	m := builtinManagers(t)
	rs := func(name, replicas string) *object.Object {
		o, err := object.Decode([]byte(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"` + name + `","namespace":"default"},
 "spec":{"replicas":` + replicas + `,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","command":["sleep","60"]}]}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		o.Metadata.ManagedFields = json.RawMessage(`[{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1","time":"2020-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{}}}}]`)
		return o
	}
	for _, name := range []string{"bad", "good"} {
		replicas := "1"
		if name == "bad" {
			replicas = `"many"`
		}
		live := rs(name, replicas)
		next := live.Clone()
		next.Status = json.RawMessage(`{"replicas":1}`)
		got := decodeEntries(t, m.Track("homeostat-controllers", "status", live, next))
		recorded := slices.ContainsFunc(got, func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == "homeostat-controllers" && e.Subresource == "status"
		})
		if want := name == "good"; recorded != want {
			t.Fatalf("%s: the status write recorded: %v, want %v (%+v)", name, recorded, want, got)
		}
	}
}

// TestAnswersByShape: updates that differ only in values the field
// manager does not compare (a Lease's renewTime, a pod's node) are
// answered from memory after the first, with what the field manager
// itself gives; updates of another shape (a value dropped, set to null,
// of another kind, a list changed) are not answered with theirs.
func TestAnswersByShape(t *testing.T) {
	m := builtinManagers(t)
	decode := func(s string) *object.Object {
		o, err := object.Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	lease := func(node string) *object.Object {
		return m.Track("homeostat-nodeagent", "", nil, decode(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"`+node+`","namespace":"kube-node-lease"},
 "spec":{"holderIdentity":"`+node+`","leaseDurationSeconds":40,"renewTime":"2026-01-01T00:00:00.000000Z"}}`))
	}
	pod := func(name string) *object.Object {
		return m.Track("homeostat-controllers", "", nil, decode(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+name+`","namespace":"default"},
 "spec":{"containers":[{"name":"web","command":["sleep","60"]}]}}`))
	}
	spec := func(s string) func(o *object.Object) { return func(o *object.Object) { o.Spec = json.RawMessage(s) } }
	// check writes next over live both ways, compares, and tells whether
	// the answer came from memory.
	check := func(step, manager, sub string, live *object.Object, change func(*object.Object)) (*object.Object, bool) {
		t.Helper()
		live = aged(t, live, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
		next := live.Clone()
		change(next)
		parts := object.Differing(live, next)
		key, ok := keyOf(t, m.root(next.APIVersion, next.Kind), manager, sub, next, decodeEntries(t, live), parts)
		if !ok {
			t.Fatalf("%s: no key", step)
		}
		_, remembered := m.updates.get(key)
		want := decodeEntries(t, m.Update(manager, sub, live, next.Clone()))
		got := m.Track(manager, sub, live, next.Clone())
		gotEntries := decodeEntries(t, got)
		if len(gotEntries) != len(want) {
			t.Fatalf("%s: %s, want %+v", step, got.Metadata.ManagedFields, want)
		}
		for _, w := range want {
			j := slices.IndexFunc(gotEntries, func(g metav1.ManagedFieldsEntry) bool { return identityOf(g) == identityOf(w) })
			if j < 0 || !object.SameJSON(gotEntries[j].FieldsV1.Raw, w.FieldsV1.Raw) {
				t.Fatalf("%s: %s, want %+v", step, got.Metadata.ManagedFields, want)
			}
			if d := gotEntries[j].Time.Sub(w.Time.Time); d < -time.Second || d > time.Second {
				t.Fatalf("%s: %+v written at %s, want %s", step, identityOf(w), gotEntries[j].Time, w.Time)
			}
		}
		return got, remembered
	}
	renew := func(node, at string) func(*object.Object) {
		return spec(`{"holderIdentity":"` + node + `","leaseDurationSeconds":40,"renewTime":"` + at + `"}`)
	}
	a, b := lease("node-a"), lease("node-b")
	a, _ = check("first renewal", "homeostat-nodeagent", "", a, renew("node-a", "2026-01-01T00:00:10.000000Z"))
	for i, at := range []string{"2026-01-01T00:00:20.000000Z", "2026-01-01T00:00:30.123456Z"} {
		var hit bool
		if b, hit = check(fmt.Sprintf("renewal %d", i), "homeostat-nodeagent", "", b, renew("node-b", at)); !hit {
			t.Fatalf("renewal %d of another node at %s not answered from memory", i, at)
		}
	}
	// Another writer takes the renewal: the shape is the same, the
	// entries it replaces are not.
	if _, hit := check("taken", "someone-else", "", a, renew("node-a", "2026-01-01T00:01:00.000000Z")); hit {
		t.Fatal("a renewal by another writer was answered as the node's")
	}
	// Not the renewals' shape: each is the field manager's own answer.
	for step, change := range map[string]func(*object.Object){
		"holder to null":     spec(`{"holderIdentity":null,"leaseDurationSeconds":40,"renewTime":"2026-01-01T00:00:40.000000Z"}`),
		"holder dropped":     spec(`{"leaseDurationSeconds":40,"renewTime":"2026-01-01T00:00:40.000000Z"}`),
		"duration a string":  spec(`{"holderIdentity":"node-b","leaseDurationSeconds":"40","renewTime":"2026-01-01T00:00:40.000000Z"}`),
		"duration unchanged": spec(`{"holderIdentity":"node-b","leaseDurationSeconds":40.0,"renewTime":"2026-01-01T00:00:40.000000Z"}`),
	} {
		if _, hit := check(step, "homeostat-nodeagent", "", b, change); hit && step != "duration unchanged" {
			t.Fatalf("%s: answered as a renewal", step)
		}
	}
	// Pods bound to different nodes: the binding's shape is one.
	bind := func(node string) func(*object.Object) {
		return spec(`{"containers":[{"name":"web","command":["sleep","60"]}],"nodeName":"` + node + `"}`)
	}
	if _, hit := check("bind p0", "homeostat-scheduler", "", pod("p0"), bind("node-1")); hit {
		t.Fatal("the first binding was answered from memory")
	}
	if _, hit := check("bind p1", "homeostat-scheduler", "", pod("p1"), bind("node-2")); !hit {
		t.Fatal("a binding to another node was not answered from memory")
	}
	// Conditions are taken by their types: two Deployments' first status,
	// each naming its own ReplicaSet at its own time, are answered alike;
	// other types, or the same in another order, are not.
	deployment := func(name string) *object.Object {
		return m.Track("homeostat-controllers", "", nil, decode(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"`+name+`","namespace":"default"},
 "spec":{"replicas":10,"selector":{"matchLabels":{"app":"`+name+`"}},"template":{"metadata":{"labels":{"app":"`+name+`"}},"spec":{"containers":[{"name":"web","command":["sleep","60"]}]}}}}`))
	}
	condition := func(typ, status, at, msg string) string {
		return `{"type":"` + typ + `","status":"` + status + `","lastTransitionTime":"` + at + `","lastUpdateTime":"` + at + `","reason":"R","message":"` + msg + `"}`
	}
	progressing := func(conds ...string) func(*object.Object) {
		return func(o *object.Object) {
			o.Status = json.RawMessage(`{"observedGeneration":1,"unavailableReplicas":10,"conditions":[` + strings.Join(conds, ",") + `]}`)
		}
	}
	for i, tc := range []struct {
		name  string
		conds []string
		hit   bool
	}{
		{"d1", []string{condition("Available", "False", "2026-01-01T00:00:01Z", "none"), condition("Progressing", "True", "2026-01-01T00:00:01Z", "ReplicaSet d1-abc")}, false},
		{"d2", []string{condition("Available", "False", "2026-01-01T00:00:09Z", "none"), condition("Progressing", "True", "2026-01-01T00:00:09Z", "ReplicaSet d2-xyz")}, true},
		{"d3", []string{condition("Progressing", "True", "2026-01-01T00:00:09Z", "ReplicaSet d3-xyz"), condition("Available", "False", "2026-01-01T00:00:09Z", "none")}, false},
		{"d4", []string{condition("Available", "False", "2026-01-01T00:00:09Z", "none"), condition("ReplicaFailure", "True", "2026-01-01T00:00:09Z", "quota")}, false},
		{"d5", []string{condition("Available", "False", "2026-01-01T00:00:09Z", "none"), condition("Progressing", "False", "2026-01-01T00:00:09Z", "ReplicaSet d5-pqr")}, true},
	} {
		if _, hit := check("status of "+tc.name, "homeostat-controllers", "status", deployment(tc.name), progressing(tc.conds...)); hit != tc.hit {
			t.Errorf("%d, %s: answered from memory %v, want %v", i, tc.name, hit, tc.hit)
		}
	}
	// A list that changes is compared by its items: the new item's key is
	// in the answer, and another item is another answer.
	for i, name := range []string{"side", "helper"} {
		_, hit := check("container "+name, "homeostat-controllers", "", pod("p2"),
			spec(`{"containers":[{"name":"web","command":["sleep","60"]},{"name":"`+name+`","command":["sleep","1"]}]}`))
		if hit {
			t.Fatalf("step %d: a container named %s was answered from memory", i, name)
		}
	}
}

// TestShapes: the shapes of members that must be answered alike are one,
// and of those that may not, differ; first of no known type, then of a
// status whose conditions are taken by their types.
func TestShapes(t *testing.T) {
	status := builtinManagers(t).root("apps/v1", "Deployment").field("status")
	if _, _, ok := status.field("conditions").keyed(); !ok {
		t.Fatal("a Deployment's conditions are not taken by their keys")
	}
	var pl place
	shape := func(live, next string) string {
		h := sha256.New()
		var l, n []byte
		if live != "" {
			l = []byte(live)
		}
		if next != "" {
			n = []byte(next)
		}
		if !shapeOf(h, pl, l, n) {
			t.Fatalf("no shape of %s -> %s", live, next)
		}
		return fmt.Sprintf("%x", h.Sum(nil))
	}
	for _, tc := range []struct {
		name   string
		l1, n1 string
		l2, n2 string
		same   bool
	}{
		{"a time renewed", `{"t":"a","d":40}`, `{"t":"b","d":40}`, `{"t":"x","d":40}`, `{"t":"y","d":40}`, true},
		{"equal values", `{"d":40,"x":"p"}`, `{"d":40,"x":"p"}`, `{"d":7,"x":"q"}`, `{"d":7,"x":"q"}`, true},
		{"1 and 1.0 are equal", `{"d":1}`, `{"d":1.0}`, `{"d":2}`, `{"d":2}`, true},
		{"a field added", `{"a":1}`, `{"a":1,"n":"x"}`, `{"a":1}`, `{"a":1,"n":"y"}`, true},
		{"equal lists", `{"c":[1,2],"t":"a"}`, `{"c":[1,2],"t":"b"}`, `{"c":[3],"t":"a"}`, `{"c":[3],"t":"b"}`, true},
		{"changed or equal", `{"t":"a"}`, `{"t":"b"}`, `{"t":"a"}`, `{"t":"a"}`, false},
		{"changed or to null", `{"t":"a"}`, `{"t":"b"}`, `{"t":"a"}`, `{"t":null}`, false},
		{"changed or dropped", `{"t":"a","u":1}`, `{"t":"b","u":1}`, `{"t":"a","u":1}`, `{"u":1}`, false},
		{"to a number or a string", `{"t":"a"}`, `{"t":"b"}`, `{"t":"a"}`, `{"t":2}`, false},
		{"integer or float", `{"t":1}`, `{"t":2}`, `{"t":1}`, `{"t":2.5}`, false},
		{"other field names", `{"t":"a"}`, `{"t":"b"}`, `{"u":"a"}`, `{"u":"b"}`, false},
		{"lists that differ", `{"c":[{"k":"a"}]}`, `{"c":[{"k":"b"}]}`, `{"c":[{"k":"a"}]}`, `{"c":[{"k":"c"}]}`, false},
		{"an object or a scalar", `{"o":{"a":1}}`, `{"o":{"a":2}}`, `{"o":{"a":1}}`, `{"o":3}`, false},
		{"added whole or in part", ``, `{"a":"x"}`, `{}`, `{"a":"x"}`, false},
		{"names that run into each other", `{"a":1,"b":2,"z":"x"}`, `{"a":1,"b":2,"z":"y"}`, `{"a\u0000=b":1,"z":"x"}`, `{"a\u0000=b":1,"z":"y"}`, false},
	} {
		if got := shape(tc.l1, tc.n1) == shape(tc.l2, tc.n2); got != tc.same {
			t.Errorf("%s: same shape %v, want %v", tc.name, got, tc.same)
		}
	}
	pl = status
	c := func(typ, msg string) string { return `{"type":"` + typ + `","status":"True","message":"` + msg + `"}` }
	conds := func(cs ...string) string { return `{"replicas":1,"conditions":[` + strings.Join(cs, ",") + `]}` }
	for _, tc := range []struct {
		name   string
		l1, n1 string
		l2, n2 string
		same   bool
	}{
		{"conditions added, by their types", ``, conds(c("A", "x"), c("P", "y")), ``, conds(c("A", "u"), c("P", "v")), true},
		{"a condition's message changed", conds(c("A", "x")), conds(c("A", "y")), conds(c("A", "u")), conds(c("A", "v")), true},
		{"one changed or both", conds(c("A", "x"), c("P", "y")), conds(c("A", "x"), c("P", "z")), conds(c("A", "u"), c("P", "v")), conds(c("A", "w"), c("P", "q")), false},
		{"other types", ``, conds(c("A", "x")), ``, conds(c("B", "x")), false},
		{"another order", ``, conds(c("A", "x"), c("P", "y")), ``, conds(c("P", "y"), c("A", "x")), false},
		{"reordered or not", conds(c("A", "x"), c("P", "y")), conds(c("P", "y"), c("A", "z")), conds(c("A", "x"), c("P", "y")), conds(c("A", "z"), c("P", "y")), false},
		{"a condition added or none", conds(c("A", "x")), conds(c("A", "x"), c("P", "y")), conds(c("A", "x")), conds(c("A", "y")), false},
		{"a condition dropped or changed", conds(c("A", "x"), c("P", "y")), conds(c("A", "x")), conds(c("A", "x"), c("P", "y")), conds(c("A", "x"), c("P", "z")), false},
		{"a type's kind", ``, `{"conditions":[{"type":"1"}]}`, ``, `{"conditions":[{"type":1}]}`, false},
		{"an integer type or a float", ``, `{"conditions":[{"type":1}]}`, ``, `{"conditions":[{"type":1.375}]}`, false},
		{"float types that round alike", ``, `{"conditions":[{"type":1.25}]}`, ``, `{"conditions":[{"type":1.375}]}`, false},
		{"no type: taken whole", ``, `{"conditions":[{"status":"a"}]}`, ``, `{"conditions":[{"status":"b"}]}`, false},
		{"a type twice: taken whole", ``, conds(c("A", "x"), c("A", "y")), ``, conds(c("A", "u"), c("A", "v")), false},
		{"items that are not objects: taken whole", ``, `{"conditions":["a"]}`, ``, `{"conditions":["b"]}`, false},
	} {
		if got := shape(tc.l1, tc.n1) == shape(tc.l2, tc.n2); got != tc.same {
			t.Errorf("%s: same shape %v, want %v", tc.name, got, tc.same)
		}
	}
}

// TestUpdatesOfUntrackedObjects: an object that has no managed fields and
// a uid (made without them) stays without, as the field manager leaves
// it, through a write of its status and one of its spec; one without a
// uid is recorded, as the field manager records it.
func TestUpdatesOfUntrackedObjects(t *testing.T) {
	m := builtinManagers(t)
	for _, uid := range []string{"uid-1", ""} {
		live, err := object.Decode([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default","uid":"` + uid + `"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"web"}]}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			sub    string
			change func(*object.Object)
		}{
			{"status", func(o *object.Object) { o.Status = json.RawMessage(`{"replicas":1}`) }},
			{"", func(o *object.Object) { o.Metadata.Labels = map[string]string{"tier": "web"} }},
		} {
			next := live.Clone()
			w.change(next)
			want := m.Update("homeostat-controllers", w.sub, live, next.Clone())
			got := m.Track("homeostat-controllers", w.sub, live, next.Clone())
			if tracked := len(got.Metadata.ManagedFields) > 0; tracked != (uid == "") || tracked != (len(want.Metadata.ManagedFields) > 0) {
				t.Fatalf("uid %q, write of %q: managed fields %s, want %s", uid, w.sub, got.Metadata.ManagedFields, want.Metadata.ManagedFields)
			}
			if uid != "" {
				continue
			}
			gotEntries, wantEntries := decodeEntries(t, got), decodeEntries(t, want)
			if len(gotEntries) != 1 || len(wantEntries) != 1 || identityOf(gotEntries[0]) != identityOf(wantEntries[0]) ||
				!object.SameJSON(gotEntries[0].FieldsV1.Raw, wantEntries[0].FieldsV1.Raw) {
				t.Fatalf("write of %q: managed fields %s, want %s", w.sub, got.Metadata.ManagedFields, want.Metadata.ManagedFields)
			}
		}
	}
}
