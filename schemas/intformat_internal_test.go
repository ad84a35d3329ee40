package schemas

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestIntFormatCheck covers the Go values a caller may validate besides
// the json.Number that DecodeJSON produces.
func TestIntFormatCheck(t *testing.T) {
	i32 := intFormats["int32"]
	tests := []struct {
		name string
		v    any
		want intProblem
	}{
		{"json max", json.Number("2147483647"), 0},
		{"json above", json.Number("2147483648"), aboveMaximum},
		{"json below", json.Number("-2147483649"), belowMinimum},
		{"json below int64", json.Number("-9223372036854775809"), belowMinimum},
		{"json 1e30", json.Number("1e30"), aboveMaximum},
		{"json 1e-30", json.Number("1e-30"), notWhole},
		{"json 1E3", json.Number("1E3"), notPlain},
		{"json -0", json.Number("-0"), 0},
		{"json above by a fraction", json.Number("2147483647.5"), aboveMaximum},
		{"json huge exponent", json.Number("1e999999"), aboveMaximum},
		{"json tiny exponent", json.Number("1e-999999"), notWhole},
		{"json exponent beyond floats", json.Number("1e99999999999999999999"), notPlain},
		{"float64 max", float64(math.MaxInt32), 0},
		{"float64 above", float64(math.MaxInt32 + 1), aboveMaximum},
		{"float64 1e30", 1e30, aboveMaximum},
		{"float64 fraction", 1.5, notWhole},
		{"float64 infinity", math.Inf(1), 0},
		{"float32 above", float32(1e10), aboveMaximum},
		{"int64 above", int64(math.MaxInt32 + 1), aboveMaximum},
		{"uint64 above", uint64(math.MaxUint64), aboveMaximum},
		{"int", 7, 0},
		{"string", "25%", 0},
		{"null", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got intProblem
			if e := i32.check(tt.v); e != nil {
				got = e.Problem
			}
			if got != tt.want {
				t.Errorf("check(%v) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

// TestIntFormatKeepsMetaschema: asserting the vocabulary must not change
// which schema documents compile, or ResourceDefinitions that were valid
// (or invalid) would change meaning.
func TestIntFormatKeepsMetaschema(t *testing.T) {
	docs := []string{
		`{"type":"object","properties":{"a":{"type":"integer","format":"int32"}}}`,
		`{"type":"object","description":12}`,
		`{"format":12}`,
		`{"contentEncoding":12}`,
		`{"contentSchema":12}`,
		`{"deprecated":"x"}`,
		`{"examples":"x"}`,
		`{"default":{"format":"int32"}}`,
		`{"type":12}`,
		`{"properties":{"a":{"description":12}}}`,
		`{"properties":{"a":{"items":{"format":12}}}}`,
		`{"$defs":{"x":{"title":1}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","examples":"x"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","format":5}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","maximum":3,"exclusiveMaximum":true}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","description":3}`,
	}
	compiles := func(doc any, vocab bool) bool {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if vocab {
			c.RegisterVocabulary(intFormatVocab())
			c.AssertVocabs()
		}
		const url = "https://homeostat.io/test/schema.json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		_, err := c.Compile(url)
		return err == nil
	}
	var got, want []bool
	for _, s := range docs {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, compiles(doc, true))
		want = append(want, compiles(doc, false))
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("compiles with the vocabulary (-got +want), in the order of %q:\n%s", docs, diff)
	}
}
