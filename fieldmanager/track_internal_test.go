package fieldmanager

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

// builtinManagers are the field managers of the built-in kinds.
func builtinManagers(t *testing.T) *Managers {
	t.Helper()
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	return New(openapi.NewCache(reg))
}

// TestCreatesOfOtherOwners: the pods of different owners are answered
// from one answer remembered, each naming its own owner as the field
// manager itself does; pods whose owner or fields a stand-in could be
// mistaken in are answered by the field manager.
func TestCreatesOfOtherOwners(t *testing.T) {
	m := builtinManagers(t)
	pod := func(name, ownerUID, ownerName, container string) *object.Object {
		o, err := object.Decode([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"default",
 "labels":{"app":"web","pod-template-hash":"` + ownerName + `"},
 "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":` + quote(ownerName) + `,"uid":` + quote(ownerUID) + `,"controller":true}]},
 "spec":{"containers":[{"name":` + quote(container) + `,"command":["sleep","60"]}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for i, tc := range []struct {
		name, ownerUID, ownerName, container string
		remembered                           bool
	}{
		{"first", "8d3c7a52-0001", "web-abc", "web", false},
		{"another owner", "8d3c7a52-0002", "web-def", "web", true},
		{"an owner's uid quoted in JSON", `uid"with\quotes`, "web-ghi", "web", false},
		{"an owner's uid with a stand-in", "x" + ownerUIDStandIn, "web-jkl", "web", false},
		{"a container named as the stand-in", "8d3c7a52-0003", "web-mno", ownerUIDStandIn, false},
		{"a container named as the owner", "8d3c7a52-0004", "web-pqr", "8d3c7a52-0004", false},
		{"again, of another owner", "8d3c7a52-0005", "web-stu", "8d3c7a52-0004", true},
	} {
		o := pod(tc.name, tc.ownerUID, tc.ownerName, tc.container)
		remembered := false
		if c, ok := newCreate("homeostat-controllers", o); ok {
			shape, _ := c.shape(m.root(o.APIVersion, o.Kind))
			_, remembered = m.creates.get(shape)
		}
		if remembered != tc.remembered {
			t.Errorf("%d %s: answered from memory %v, want %v", i, tc.name, remembered, tc.remembered)
		}
		got := m.Track("homeostat-controllers", "", nil, o.Clone())
		want := m.Update("homeostat-controllers", "", nil, o.Clone())
		g, w := decodeEntries(t, got), decodeEntries(t, want)
		if len(g) != 1 || len(w) != 1 || !object.SameJSON(g[0].FieldsV1.Raw, w[0].FieldsV1.Raw) {
			t.Fatalf("%s: %s, want %s", tc.name, got.Metadata.ManagedFields, want.Metadata.ManagedFields)
		}
		if !strings.Contains(string(g[0].FieldsV1.Raw), "uid") {
			t.Fatalf("%s: the owner is not in the fields: %s", tc.name, g[0].FieldsV1.Raw)
		}
	}
}

// TestCreatesOfOtherLabelValues: creates whose labels and annotations
// differ in their values alone are one content, answered as the field
// manager answers each; other keys are another content.
func TestCreatesOfOtherLabelValues(t *testing.T) {
	m := builtinManagers(t)
	pod := func(labels, annotations string) *object.Object {
		o, err := object.Decode([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default",
 "labels":` + labels + `,"annotations":` + annotations + `},"spec":{"containers":[{"name":"web","command":["sleep","60"]}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	first := pod(`{"app":"web-1"}`, `{"note":"one"}`)
	c1, ok := newCreate("homeostat-controllers", first)
	if !ok {
		t.Fatal("a plain pod is not remembered")
	}
	for _, tc := range []struct {
		name        string
		o           *object.Object
		sameContent bool
	}{
		{"other values", pod(`{"app":"web-2"}`, `{"note":"two"}`), true},
		{"another label", pod(`{"app":"web-1","tier":"front"}`, `{"note":"one"}`), false},
		{"another annotation", pod(`{"app":"web-1"}`, `{"other":"one"}`), false},
	} {
		c, ok := newCreate("homeostat-controllers", tc.o)
		if !ok || (c.content == c1.content) != tc.sameContent {
			t.Errorf("%s: remembered %v, the first's content %v, want %v", tc.name, ok, c.content == c1.content, tc.sameContent)
		}
	}
	for _, o := range []*object.Object{first, pod(`{"app":"web-2"}`, `{"note":"two"}`), pod(`{"app":"web-1","tier":"front"}`, `{"note":"one"}`)} {
		got := m.Track("homeostat-controllers", "", nil, o.Clone())
		want := m.Update("homeostat-controllers", "", nil, o.Clone())
		g, w := decodeEntries(t, got), decodeEntries(t, want)
		if len(g) != 1 || len(w) != 1 || !object.SameJSON(g[0].FieldsV1.Raw, w[0].FieldsV1.Raw) {
			t.Fatalf("labels %v: %s, want %s", o.Metadata.Labels, got.Metadata.ManagedFields, want.Metadata.ManagedFields)
		}
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestStampsOfOneOwnerAndSecondAreShared: creates of one owner in one
// second are given one copy of their managed fields, which names that
// owner and second; another owner, another second or other content gets
// its own.
func TestStampsOfOneOwnerAndSecondAreShared(t *testing.T) {
	// As the field manager writes them: the owner by uid alone.
	encoded := []byte(`[{"manager":"m",` + timeStandIn + `,"fieldsV1":{"k:{\"uid\":\"` + ownerUIDStandIn + `\"}":{"f:name":{}}}}]`)
	owner := func(uid, name string) create {
		return create{content: [32]byte{1}, owner: &object.OwnerReference{UID: uid, Name: name}}
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var s stamps
	first := s.stamp(owner("u1", "rs1"), encoded, at)
	want := `[{"manager":"m","time":"2026-11-27T10:00:00Z","fieldsV1":{"k:{\"uid\":\"u1\"}":{"f:name":{}}}}]`
	if string(first) != want {
		t.Fatalf("stamped %s, want %s", first, want)
	}
	if again := s.stamp(owner("u1", "rs1"), encoded, at.Add(900*time.Millisecond)); unsafe.SliceData(again) != unsafe.SliceData(first) {
		t.Fatal("a second create of the owner in the same second got a copy of its own")
	}
	other := create{content: [32]byte{2}, owner: &object.OwnerReference{UID: "u1", Name: "rs1"}}
	for name, got := range map[string][]byte{
		"another owner":   s.stamp(owner("u2", "rs2"), encoded, at),
		"another second":  s.stamp(owner("u1", "rs1"), encoded, at.Add(time.Second)),
		"another content": s.stamp(other, []byte(`[`+timeStandIn+`]`), at),
	} {
		if unsafe.SliceData(got) == unsafe.SliceData(first) || string(got) == want {
			t.Errorf("%s: given the first create's managed fields %s", name, got)
		}
	}
	if grown := append(first, '!'); unsafe.SliceData(grown) == unsafe.SliceData(first) {
		t.Fatal("an append to stamped managed fields wrote into the shared copy")
	}
	s.reset()
	if fresh := s.stamp(owner("u1", "rs1"), encoded, at); unsafe.SliceData(fresh) == unsafe.SliceData(first) || string(fresh) != want {
		t.Fatalf("after a reset, stamped %s from the old copy", fresh)
	}
}

// TestWarmMakesTheTypesOnce: Warm makes the documents' types, which the
// writes after it use as they are, and the documents changing makes them
// again.
func TestWarmMakesTheTypesOnce(t *testing.T) {
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	m := New(openapi.NewCache(reg))
	if m.at != nil {
		t.Fatal("types made before they were asked for")
	}
	if err := m.Warm(); err != nil {
		t.Fatal(err)
	}
	warm, tc := m.at, m.tc
	if warm == nil || tc == nil {
		t.Fatal("Warm made no types")
	}
	if _, err := m.forKind("v1", "Pod", ""); err != nil {
		t.Fatal(err)
	}
	if m.at != warm || m.tc != tc {
		t.Fatal("a write after Warm made the types again")
	}
	if err := m.Warm(); err != nil || m.tc != tc {
		t.Fatalf("Warm again made the types again (err %v)", err)
	}
	reg.Unregister("example.com", "widgets") // a change of the registry, though it served none
	if _, err := m.forKind("v1", "Pod", ""); err != nil {
		t.Fatal(err)
	}
	if m.at == warm || m.tc == tc {
		t.Fatal("changed documents kept the types of the old")
	}
}
