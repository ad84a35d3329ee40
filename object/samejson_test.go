package object

import (
	"bytes"
	"testing"
)

var sameJSONSeeds = [][2]string{
	{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
	{`{"a":1,"b":2}`, `{"a":1,"b":3}`},
	{`{"a":1, "b":2}`, ` {"b":2,"a":1} `},
	{`{"a":{}}`, `{"a":null}`},
	{`{"a":{"x":1,"y":[1,{"z":2}]}}`, `{"a":{"y":[1,{"z":2}],"x":1}}`},
	{`{"a":{"x":1,"y":[1,{"z":2}]}}`, `{"a":{"y":[1,{"z":3}],"x":1}}`},
	{`{"\u0061":1}`, `{"a":1}`},
	{`{"a":1,"a":1}`, `{"a":1}`},
	{`{"a":1}`, `{"a":1} {}`},
	{`{"a":1}`, `{"a":1,"b":null}`},
	{`{"a":1000}`, `{"a":1e3}`},
	{`{"a":9007199254740993}`, `{"a":9007199254740992}`},
	{`{"a":"é"}`, `{"a":"\u00e9"}`},
	{"{\"a\":\"\xff\"}", "{\"a\":\"\xfe\"}"},
	{`{"a":[1,2]}`, `{"a":[2,1]}`},
	{`{"a":1`, `{"a":1}`},
	{`[{"a":1,"b":2}]`, `[{"b":2,"a":1}]`},
	{`{"containers":[{"name":"a"}],"nodeName":"n1"}`, `{"containers":[{"name":"a"}]}`},
	{`{"a":1,"b":2,"c":3}`, `{"c":3,"a":1,"d":2}`},
	{`{"a":{"b":{"c":{"d":1,"e":2}}}}`, `{"a":{"b":{"c":{"e":2,"d":1}}}}`},
	{`{"a":{"b":{"c":{"d":1}}}}`, `{"a":{"b":{"c":{"d":2}}}}`},
}

// Comparing member by member decides as comparing whole documents in
// canonical form does, on documents that tell the two ways apart: key
// order, spacing, escapes in names and values, duplicates, numbers
// spelled otherwise, nesting, trailing data and invalid input.
func TestSameJSONMemberwiseAgreesWithCanonical(t *testing.T) {
	for _, c := range sameJSONSeeds {
		for _, p := range [][2]string{c, {c[1], c[0]}, {c[0], c[0]}} {
			a, b := []byte(p[0]), []byte(p[1])
			if bytes.Equal(a, b) {
				continue
			}
			if got, want := sameValue(a, b), sameCanonical(a, b); got != want {
				t.Errorf("sameValue(%s, %s) = %v, canonical form says %v", a, b, got, want)
			}
		}
	}
}

func FuzzSameJSON(f *testing.F) {
	for _, c := range sameJSONSeeds {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b {
			return
		}
		if got, want := sameValue([]byte(a), []byte(b)), sameCanonical([]byte(a), []byte(b)); got != want {
			t.Errorf("sameValue(%q, %q) = %v, canonical form says %v", a, b, got, want)
		}
	})
}
