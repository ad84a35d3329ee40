package fieldmanager

import (
	"strings"
	"testing"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

// TestCreatesOfOtherOwners: the pods of different owners are answered
// from one answer remembered, each naming its own owner as the field
// manager itself does; pods whose owner or fields a stand-in could be
// mistaken in are answered by the field manager.
func TestCreatesOfOtherOwners(t *testing.T) {
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	m := New(openapi.NewCache(reg))
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
			shape, _ := c.shape()
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
