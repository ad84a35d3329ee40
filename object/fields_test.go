package object_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/object"
)

// The top-level members beyond the envelope's survive a round trip, in
// Fields, whichever way the object is decoded or encoded.
func TestFieldsRoundTrip(t *testing.T) {
	in := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r","namespace":"d"},` +
		`"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}],"aggregationRule":null}`
	o, err := object.Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var rules []map[string][]string
	if err := o.Field("rules", &rules); err != nil || len(rules) != 1 || rules[0]["verbs"][0] != "get" {
		t.Fatalf("rules %v, %v", rules, err)
	}
	var viaJSON object.Object
	if err := json.Unmarshal([]byte(in), &viaJSON); err != nil || !reflect.DeepEqual(&viaJSON, o) {
		t.Fatalf("json.Unmarshal gave %+v (%v), Decode %+v", viaJSON, err, o)
	}
	for name, enc := range map[string]func(*object.Object) ([]byte, error){
		"Encode":       object.Encode,
		"json.Marshal": func(o *object.Object) ([]byte, error) { return json.Marshal(o) },
	} {
		b, err := enc(o)
		if err != nil {
			t.Fatal(err)
		}
		back, err := object.Decode(b)
		if err != nil || !reflect.DeepEqual(back, o) {
			t.Fatalf("%s: %s decodes to %+v (%v)", name, b, back, err)
		}
	}
	c := o.Clone()
	c.Fields["rules"][2] = 'X'
	if o.Fields["rules"][2] == 'X' {
		t.Fatal("Clone shares Fields")
	}
	if err := o.SetField("rules", nil); err != nil || o.Fields["rules"] != nil {
		t.Fatal("SetField(nil) kept the field")
	}
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		fields   []string
		nilObj   bool
		err      bool
	}{
		{"envelope only", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"x":"}\"{"},"status":{}}`, nil, false, false},
		{"spaces", " {\n \"kind\" : \"Pod\" , \"metadata\" : { \"name\" : \"a\" } }\n", nil, false, false},
		{"a field", `{"kind":"Role","metadata":{"name":"a"},"rules":[]}`, []string{"rules"}, false, false},
		{"escaped name", `{"kind":"Pod","metadata":{"name":"a"},"\u0072ules":1}`, []string{"rules"}, false, false},
		{"an envelope name in another case", `{"Kind":"Pod","METADATA":{"name":"a"},"data":{}}`, []string{"data"}, false, false},
		{"unknown in metadata", `{"kind":"Pod","metadata":{"name":"a","managedFields":[]}}`, nil, false, false},
		{"null", `null`, nil, true, false},
		{"empty object", `{}`, nil, false, false},
		{"trailing data", `{"kind":"Pod"} x`, nil, false, true},
		{"not an object", `[1]`, nil, false, true},
		{"cut short", `{"kind":"Pod","spec":{"a":`, nil, false, true},
		{"wrong type", `{"kind":1}`, nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := object.Decode([]byte(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if (o == nil) != tc.nilObj {
				t.Fatalf("object %v, want nil %v", o, tc.nilObj)
			}
			if o == nil {
				return
			}
			var got []string
			for k := range o.Fields {
				got = append(got, k)
			}
			if len(got) != len(tc.fields) || (len(got) > 0 && got[0] != tc.fields[0]) {
				t.Fatalf("fields %v, want %v", got, tc.fields)
			}
		})
	}
}

// FuzzDecode: Decode's one pass agrees with decoding the envelope and
// every member apart.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"kind":"Pod","metadata":{"name":"a"},"spec":{"a":[1,{"b":"c"}]}}`,
		`{"kind":"Role","rules":[{"verbs":["*"]}]}`, `{"spec":"\"}"}`, `null`, `{}`, `{"a":1,"kind":"x"}`, `{"Spec":{},"ſtatus":{},"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gerr := object.Decode(data)
		want, werr := reference(data)
		if (gerr != nil) != (werr != nil) {
			t.Fatalf("Decode error %v, reference error %v", gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode %+v, reference %+v", got, want)
		}
	})
}

// reference decodes the envelope and collects the other members, plainly.
func reference(data []byte) (*object.Object, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, err
	}
	if members == nil {
		return nil, nil
	}
	type plain struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   object.Meta     `json:"metadata"`
		Spec       json.RawMessage `json:"spec,omitempty"`
		Status     json.RawMessage `json:"status,omitempty"`
	}
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	o := &object.Object{APIVersion: p.APIVersion, Kind: p.Kind, Metadata: p.Metadata, Spec: p.Spec, Status: p.Status}
	for k, v := range members {
		// A member is the envelope's when its name matches one as
		// encoding/json matches names: in any case.
		if slices.ContainsFunc([]string{"apiVersion", "kind", "metadata", "spec", "status"}, func(e string) bool { return strings.EqualFold(e, k) }) {
			continue
		}
		if o.Fields == nil {
			o.Fields = map[string]json.RawMessage{}
		}
		o.Fields[k] = v
	}
	return o, nil
}
