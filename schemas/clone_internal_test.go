package schemas

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestClone: a default's copy is what a trip through JSON gives, for
// what schema documents decode to and for Go values besides, and the
// document that receives it owns its maps and lists.
func TestClone(t *testing.T) {
	decoded := func(s string) any {
		v, err := DecodeJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name string
		v    any
	}{
		{"a string", decoded(`"IfNotPresent"`)},
		{"a string with HTML and escapes", decoded(`"<a href=\"x\">&amp;\u2028</a>"`)},
		{"an integer", decoded(`30`)},
		{"a number as written", decoded(`1.50e3`)},
		{"a bool", decoded(`true`)},
		{"null", decoded(`null`)},
		{"an empty object", decoded(`{}`)},
		{"an empty list", decoded(`[]`)},
		{"nested", decoded(`{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"list":[1,{"a":[null,false]}]}`)},
		{"a float64 from Go", 0.25},
		{"an int from Go", 30},
		{"a typed nil map", map[string]any(nil)},
		{"a typed nil list", []any(nil)},
		{"a map of Go values", map[string]any{"n": 3, "f": 1.5, "s": []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clone(tt.v)
			if diff := cmp.Diff(viaJSON(tt.v), got); diff != "" {
				t.Fatalf("clone differs from a trip through JSON (-trip +clone):\n%s", diff)
			}
			before, _ := json.Marshal(tt.v)
			scribble(got)
			if after, _ := json.Marshal(tt.v); string(after) != string(before) {
				t.Fatalf("changing the copy changed the default: %s, was %s", after, before)
			}
		})
	}
}

// scribble changes every map and list in v.
func scribble(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			scribble(e)
		}
		clear(v)
		v["added"] = true
	case []any:
		for i, e := range v {
			scribble(e)
			v[i] = "changed"
		}
	}
}
