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
	}
	for _, tc := range cases {
		if got := schemas.DuplicateFields([]byte(tc.doc)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.doc, got, tc.want)
		}
	}
}
