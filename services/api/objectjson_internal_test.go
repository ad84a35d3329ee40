package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/homeostat/homeostat/object"
)

// An object is answered with the bytes encoding/json's Encoder wrote for
// it, HTML characters and line separators escaped wherever they sit.
func TestObjectJSONAsEncodingJSONWritesIt(t *testing.T) {
	for _, doc := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"k":"v"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a":"<b>&"},"annotations":{"x":"\u2028\u2029 é \u00e9 \\\"q\\\""}},
		  "data":{"html":"<script>&amp;</script>","sep":"a\u2028b","esc":"\u003c\u0026\t\n"},"binaryData":{"b":"AAE="}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","generation":3,"managedFields":[{"manager":"<m>","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]},
		  "spec":{"replicas":10,"ratio":1.50,"big":1e5,"neg":-0.0,"s":"a<b>&c\u2029","list":[1,"<",{"k":null},true,false]},
		  "status":{"conditions":[{"type":"Available","status":"True","message":"5 > 4 & ok"}],"observedGeneration":3}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":  { "containers" : [ { "name" : "c" , "command" : [ "sh", "-c", "echo <hi> && exit" ] } ] } }`,
	} {
		o, err := object.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		sameAsEncodingJSON(t, o)
	}
	// Members set in code rather than decoded, with space in them.
	o := &object.Object{APIVersion: "v1", Kind: "ConfigMap", Metadata: object.Meta{Name: "c", Labels: map[string]string{"a": "<&>"}},
		Status: []byte(` { "phase" : "a<b" } `),
		Fields: map[string]json.RawMessage{"data": json.RawMessage("{ \"k\" : \"<v>\u2028\" ,\n \"n\": 1.50 }")}}
	sameAsEncodingJSON(t, o)
}

// sameAsEncodingJSON checks o's answer against encoding/json's Encoder.
func sameAsEncodingJSON(t *testing.T, o *object.Object) {
	t.Helper()
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(o); err != nil {
		t.Fatal(err)
	}
	got, err := objectJSON(o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("answered\n%s\nencoding/json writes\n%s", got, want.Bytes())
	}
}
