package object_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
)

// TestStatusOnly: a write of the status alone, told field by field where
// every other member is as it was, and by encoding where they differ in
// form only.
func TestStatusOnly(t *testing.T) {
	yes := true
	no := false
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() *object.Object {
		return &object.Object{APIVersion: "v1", Kind: "Pod",
			Metadata: object.Meta{Name: "p", Namespace: "ns", UID: "u", Generation: 2, ResourceVersion: "7", CreationTimestamp: created,
				Labels: map[string]string{"a": "1"}, OwnerReferences: []object.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "r", UID: "o", Controller: &yes}},
				Finalizers: []string{"f"}, ManagedFields: json.RawMessage(`[{"manager":"m"}]`)},
			Spec:   json.RawMessage(`{"nodeName":"n"}`),
			Status: json.RawMessage(`{"phase":"Pending"}`),
			Fields: map[string]json.RawMessage{"extra": json.RawMessage(`{"x":1}`)},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(o *object.Object)
		want   bool
	}{
		{"status", func(o *object.Object) {}, true},
		{"status, with what a store sets", func(o *object.Object) {
			o.Metadata.ResourceVersion, o.Metadata.ManagedFields = "8", json.RawMessage(`[{"manager":"other"}]`)
		}, true},
		{"status, with an empty map for none", func(o *object.Object) { o.Metadata.Annotations = map[string]string{} }, true},
		{"status, with another copy of the owner's flag", func(o *object.Object) {
			c := true
			o.Metadata.OwnerReferences = []object.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "r", UID: "o", Controller: &c}}
		}, true},
		{"status, with the creation time in another zone", func(o *object.Object) {
			o.Metadata.CreationTimestamp = created.In(time.FixedZone("x", 3600))
		}, false},
		{"status, with other members spaced otherwise", func(o *object.Object) {
			o.Spec = json.RawMessage(`{ "nodeName": "n" }`)
			o.Fields = map[string]json.RawMessage{"extra": json.RawMessage(`{ "x": 1 }`)}
		}, true},
		{"a label", func(o *object.Object) { o.Metadata.Labels = map[string]string{"a": "2"} }, false},
		{"the owner's flag", func(o *object.Object) { o.Metadata.OwnerReferences[0].Controller = &no }, false},
		{"a finalizer", func(o *object.Object) { o.Metadata.Finalizers = nil }, false},
		{"the deletion", func(o *object.Object) { o.Metadata.DeletionTimestamp = &created }, false},
		{"the spec", func(o *object.Object) { o.Spec = json.RawMessage(`{"nodeName":"m"}`) }, false},
		{"another member", func(o *object.Object) { o.Fields = nil }, false},
		{"another member, from a value to an empty object", func(o *object.Object) {
			o.Fields = map[string]json.RawMessage{"extra": json.RawMessage(`{}`)}
		}, false},
	} {
		next := base()
		next.Status = json.RawMessage(`{"phase":"Running"}`)
		tc.change(next)
		if got := object.StatusOnly(base(), next); got != tc.want {
			t.Errorf("%s: StatusOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
	if object.StatusOnly(base(), base()) {
		t.Error("a write that changes nothing changes the status alone")
	}
	noSpec := base()
	noSpec.Spec = nil
	emptySpec := noSpec.Clone()
	emptySpec.Spec, emptySpec.Status = json.RawMessage(`{}`), json.RawMessage(`{"phase":"Running"}`)
	if object.StatusOnly(noSpec, emptySpec) {
		t.Error("a spec where there was none is not a change of the status alone")
	}
	if object.StatusOnly(nil, base()) {
		t.Error("a create changes the status alone")
	}
}

// TestStatusOnlyTellsStatusesApartAsTheStoreDoes: the same status spelled
// at another length is a change, as the store writes it; spelled at the
// same length, or as none in another form, it is not.
func TestStatusOnlyTellsStatusesApartAsTheStoreDoes(t *testing.T) {
	pod := func(status string) *object.Object {
		return &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "p"}, Status: json.RawMessage(status)}
	}
	for _, tc := range []struct {
		live, next string
		want       bool
	}{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, false},
		{`{"a":1}`, `{ "a": 1 }`, true},
		{``, `{}`, false},
		{`null`, ``, false},
		{``, `{"a":1}`, true},
	} {
		if got := object.StatusOnly(pod(tc.live), pod(tc.next)); got != tc.want {
			t.Errorf("status %s to %s: StatusOnly = %v, want %v", tc.live, tc.next, got, tc.want)
		}
	}
}

// TestDiffering: the members a write changes, each with both values, and
// none that differ in form only or that a store sets.
func TestDiffering(t *testing.T) {
	live := &object.Object{APIVersion: "v1", Kind: "Pod",
		Metadata: object.Meta{Name: "p", ResourceVersion: "1", Labels: map[string]string{"a": "1"}, ManagedFields: json.RawMessage(`[]`)},
		Spec:     json.RawMessage(`{"x":1}`), Status: json.RawMessage(`{"phase":"Pending"}`),
		Fields: map[string]json.RawMessage{"data": json.RawMessage(`{"k":"v"}`), "gone": json.RawMessage(`1`)}}
	next := live.Clone()
	next.Metadata.ResourceVersion, next.Metadata.ManagedFields = "2", json.RawMessage(`[{"manager":"m"}]`)
	next.Metadata.Labels = map[string]string{"a": "2"}
	next.Spec = json.RawMessage(`{ "x": 1 }`)
	next.Status = json.RawMessage(`{"phase":"Running"}`)
	next.Fields = map[string]json.RawMessage{"data": json.RawMessage(`{"k":"v"}`), "new": json.RawMessage(`2`)}
	var got []string
	for _, p := range object.Differing(live, next) {
		got = append(got, p.Name+" "+string(p.Live)+" "+string(p.Next))
	}
	want := []string{`metadata.labels {"a":"1"} {"a":"2"}`, `status {"phase":"Pending"} {"phase":"Running"}`, `fields.gone 1 `, `fields.new  2`}
	empty := live.Clone()
	empty.Status = nil
	if d := object.Differing(empty, live); len(d) != 1 || d[0].Name != "status" {
		t.Fatalf("a status where there was none: %v", d)
	}
	empty.Status = json.RawMessage(`{}`)
	nothing := empty.Clone()
	nothing.Status = nil
	if d := object.Differing(nothing, empty); len(d) != 1 || d[0].Name != "status" {
		t.Fatalf("an empty status where there was none: %v", d)
	}
	if len(got) != len(want) {
		t.Fatalf("Differing = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Differing = %q, want %q", got, want)
		}
	}
	if d := object.Differing(live, live.Clone()); len(d) != 0 {
		t.Fatalf("an object differs from its copy in %v", d)
	}
}
