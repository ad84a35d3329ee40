package schemas_test

import (
	"slices"
	"testing"

	"github.com/homeostat/homeostat/schemas"
)

func TestDuplicateFields(t *testing.T) {
	cases := []struct {
		doc  string
		want []string
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"a":1,"a":2}`, []string{"a"}},
		{`{"spec":{"replicas":1,"replicas":2}}`, []string{"spec.replicas"}},
		{`{"spec":{"containers":[{"name":"a"},{"name":"b","name":"c"}]}}`, []string{"spec.containers[1].name"}},
		{`{"a":{"x":1},"b":{"x":1}}`, nil},
		{`{"m":1,"m":{"n":1,"n":2}}`, []string{"m", "m.n"}},
		{`[{"k":1,"k":1}]`, []string{"[0].k"}},
		{`{"a":1,"a":`, []string{"a"}},
		{`{"a":1,"\u0061":2}`, []string{"a"}},
		{`{"A":1,"a":2}`, nil},
		{`{"a":{"b":1},"c":[{"b":1},{"b":2}]}`, nil},
		{"{\"a\":\"\xff\",\"a\":1}", []string{"a"}},
		{` {"k":[1,2]} `, nil},
	}
	for _, tc := range cases {
		if got := schemas.DuplicateFields([]byte(tc.doc)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.doc, got, tc.want)
		}
	}
}

// BenchmarkDuplicateFields: a Deployment's manifest, which names each
// member once, as nearly every request body does.
func BenchmarkDuplicateFields(b *testing.B) {
	doc := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},
 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
  "spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80,"name":"http"}],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}]}}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if d := schemas.DuplicateFields(doc); d != nil {
			b.Fatal(d)
		}
	}
}
