package object

import (
	stdjson "encoding/json"
	"reflect"
	"testing"
	"time"
)

// SameHead tells apart every member of the head, and nothing else: each
// field of an object and of its metadata is set in turn on a copy, and
// only the parts, the managed fields, the generation and the
// resourceVersion leave the head the same. A field added to either type
// is covered here without a word of this test changing.
func TestSameHeadEveryMember(t *testing.T) {
	base := layoutCase("p", `[{"manager":"m"}]`, `{"a":1}`, `{"phase":"Running"}`)
	outside := map[string]bool{"Spec": true, "Status": true, "ManagedFields": true, "Generation": true, "ResourceVersion": true}
	check := func(name string, set func(o *Object)) {
		t.Helper()
		o := base.Clone()
		set(o)
		if got, want := SameHead(base, o), outside[name]; got != want {
			t.Errorf("%s changed: SameHead %v, want %v", name, got, want)
		}
	}
	ot := reflect.TypeOf(Object{})
	for i := range ot.NumField() {
		f := ot.Field(i)
		if f.Name == "Metadata" {
			continue
		}
		check(f.Name, func(o *Object) { reflect.ValueOf(o).Elem().Field(i).Set(another(t, f.Type)) })
	}
	mt := reflect.TypeOf(Meta{})
	for i := range mt.NumField() {
		f := mt.Field(i)
		check(f.Name, func(o *Object) { reflect.ValueOf(&o.Metadata).Elem().Field(i).Set(another(t, f.Type)) })
	}
	if !SameHead(base, base.Clone()) {
		t.Error("a copy's head differs")
	}
	// The same instant in another zone encodes otherwise.
	at, elsewhere := base.Clone(), base.Clone()
	at.Metadata.CreationTimestamp = time.Unix(1e9, 0).UTC()
	elsewhere.Metadata.CreationTimestamp = time.Unix(1e9, 0).In(time.FixedZone("east", 3600))
	if SameHead(at, elsewhere) {
		t.Error("times that encode otherwise make the same head")
	}
	if SameHead(nil, base) || SameHead(base, nil) {
		t.Error("nil has a head")
	}
}

// another is a value of type t that differs from what layoutCase sets.
func another(t *testing.T, typ reflect.Type) reflect.Value {
	t.Helper()
	switch typ {
	case reflect.TypeOf(time.Time{}):
		return reflect.ValueOf(time.Unix(1e9, 0).UTC())
	case reflect.TypeOf(stdjson.RawMessage(nil)):
		return reflect.ValueOf(stdjson.RawMessage(`{"other":true}`))
	case reflect.TypeOf(map[string]stdjson.RawMessage(nil)):
		return reflect.ValueOf(map[string]stdjson.RawMessage{"data": stdjson.RawMessage(`{}`)})
	}
	switch typ.Kind() {
	case reflect.String:
		return reflect.ValueOf("another").Convert(typ)
	case reflect.Int64:
		return reflect.ValueOf(int64(7)).Convert(typ)
	case reflect.Pointer:
		v := reflect.New(typ.Elem())
		v.Elem().Set(another(t, typ.Elem()))
		return v
	case reflect.Map:
		m := reflect.MakeMap(typ)
		m.SetMapIndex(reflect.ValueOf("another"), reflect.ValueOf("value"))
		return m
	case reflect.Slice:
		return reflect.MakeSlice(typ, 1, 1)
	}
	t.Fatalf("no other value of %s: teach the test one", typ)
	return reflect.Value{}
}

// A change that keeps the head, decoded over the revision it changed,
// is what decoding it whole gives, and shares that revision's metadata.
func TestDecodeOver(t *testing.T) {
	pod, err := Decode(readPod(t))
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]func(o *Object){
		"the status": func(o *Object) { o.Status = stdjson.RawMessage(`{"phase":"Failed"}`) },
		"the spec and generation": func(o *Object) {
			o.Spec, o.Metadata.Generation = stdjson.RawMessage(`{"nodeName":"n"}`), o.Metadata.Generation+1
		},
		"the managed fields":        func(o *Object) { o.Metadata.ManagedFields = stdjson.RawMessage(`[{"manager":"k"}]`) },
		"the status gone":           func(o *Object) { o.Status = nil },
		"no managed fields or spec": func(o *Object) { o.Metadata.ManagedFields, o.Spec = nil, nil },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			prior := asStored(t, pod)
			n := prior.Clone()
			change(n)
			if !SameHead(prior, n) {
				t.Fatal("the change moved the head")
			}
			data, l, err := EncodeLayout(n)
			if err != nil || l == (Layout{}) {
				t.Fatalf("no layout (%v)", err)
			}
			whole, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := DecodeOver(data, l, prior, n.Metadata.Generation)
			if !ok {
				t.Fatal("not decoded over its prior")
			}
			if !reflect.DeepEqual(got, whole) {
				t.Fatalf("decoded over its prior\n%+v\nwhole\n%+v", got, whole)
			}
			if len(prior.Metadata.Labels) == 0 || reflect.ValueOf(got.Metadata.Labels).Pointer() != reflect.ValueOf(prior.Metadata.Labels).Pointer() {
				t.Fatal("the labels were decoded again, not shared")
			}
		})
	}
	data, l, err := EncodeLayout(pod)
	if err != nil {
		t.Fatal(err)
	}
	l.Spec[0]++
	if _, ok := DecodeOver(data, l, pod, 1); ok {
		t.Fatal("decoded by a layout that does not fit")
	}
	withFields := pod.Clone()
	withFields.Fields = map[string]stdjson.RawMessage{"data": stdjson.RawMessage(`{}`)}
	l.Spec[0]--
	if _, ok := DecodeOver(data, l, withFields, 1); ok {
		t.Fatal("decoded over a prior with members of its own")
	}
}
