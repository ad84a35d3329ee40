package schemas_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/homeostat/homeostat/schemas"
)

// FuzzValidate feeds arbitrary JSON to every built-in kind's validator. It
// must never panic, must fail only with an *Invalid, and defaulting a valid
// object must leave it valid.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","command":["x"],"livenessProbe":{"exec":{"command":["true"]}}}]}}}}`,
		`{"apiVersion":"homeostat.io/v1","kind":"ResourceDefinition","metadata":{"name":"ws.a.b"},"spec":{"group":"a.b","version":"v1","kind":"W","plural":"ws","schema":{"$ref":"#/nope"}}}`,
		`{"metadata":{"labels":{"a/b/c":"d"}}}`,
		`[]`, `null`, `{"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"In"}]}}}`,
	} {
		f.Add([]byte(s))
	}
	r, err := schemas.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		doc, err := schemas.DecodeJSON(in)
		if err != nil {
			return
		}
		for _, res := range r.Resources() {
			err := res.Validate(doc)
			if err == nil {
				res.Default(doc)
				if err := res.Validate(doc); err != nil {
					b, _ := json.Marshal(doc)
					t.Fatalf("%s: valid object invalid after defaulting: %s: %v", res.Kind, b, err)
				}
				continue
			}
			if !errors.Is(err, schemas.ErrInvalid) {
				t.Fatalf("%s: error is not ErrInvalid: %v", res.Kind, err)
			}
		}
	})
}
