package schemas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/homeostat/homeostat/schemas"
)

// docSeeds are documents whose reading and writing encoding/json and the
// schemas' own codec must agree on.
var docSeeds = []string{
	`{"b":1,"a":[1,2.50,-3e10,{"z":"<a&b>","y":"\u2028\u2029","x":"\u0001\b\f\n\r\t\u007f"}],"c":null,"d":true,"e":{},"f":[]}`,
	`{"k":"héllo wörld ✓ 😀","n":12345678901234567890123,"m":1.0000000000000000001,"z":-0,"e":1E+2,"f":0.1e-5}`,
	"{\"bad\":\"\xff\xfe ok\",\"\xffkey\":1}",
	`{"":"empty key","a\"b":"quote","\u00e9":"e-acute","Z":"upper","z":"lower"}`,
	// Keys beyond the Basic Multilingual Plane sort by their UTF-8 bytes,
	// as encoding/json sorts them, not by UTF-16.
	`{"\uffff":1,"\ud83d\ude00":2,"\ue000":3,"a":4,"\u00ff":5}`,
	`{"dup":1,"dup":{"x":2}}`,
	`[1,{"a":[[],[{}]]},"x",null,false]`,
	`"just a string"`, `12`, `null`, " \n{\"spaced\" : [ 1 , 2 ] }\t\n",
	// Refused by both: what follows a document but white space.
	`{} {}`, `{}}`, `1 2`, `[]x`, ``,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"app":"d"},"managedFields":[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{}}}}}}}}]},"spec":{"replicas":3}}`,
}

// TestDocJSONAsEncodingJSON: the codec reads each seed into the document
// encoding/json (UseNumber) reads, and writes that document back byte for
// byte as encoding/json.Marshal does.
func TestDocJSONAsEncodingJSON(t *testing.T) {
	for _, s := range docSeeds {
		sameAsEncodingJSON(t, []byte(s))
	}
}

// FuzzDocJSON checks the same of any input: both readers accept it or
// both refuse it, and what both accept reads and writes alike.
func FuzzDocJSON(f *testing.F) {
	for _, s := range docSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		sameAsEncodingJSON(t, in)
	})
}

func sameAsEncodingJSON(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := stdDecode(in)
	got, err := schemas.DecodeJSON(in)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: DecodeJSON error %v, encoding/json's %v", in, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: DecodeJSON read %#v, encoding/json %#v", in, got, want)
	}
	writesAsEncodingJSON(t, want)
}

// writesAsEncodingJSON fails t unless EncodeJSON writes v as
// encoding/json.Marshal does.
func writesAsEncodingJSON(t *testing.T, v any) {
	t.Helper()
	want, err1 := json.Marshal(v)
	got, err2 := schemas.EncodeJSON(v)
	if err1 != nil || err2 != nil {
		t.Fatalf("%#v: writing: %v, %v", v, err2, err1)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%#v: EncodeJSON wrote\n%s\nencoding/json\n%s", v, got, want)
	}
}

// stdDecode is how documents were read before: encoding/json with
// UseNumber, one value and nothing after it.
func stdDecode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// TestEncodeJSONOfGoValues: values the defaults put in a document, or
// that are written as documents, come out as encoding/json writes them.
func TestEncodeJSONOfGoValues(t *testing.T) {
	for _, v := range []any{
		map[string]any{"zero": json.Number(""), "list": []any(nil), "map": map[string]any(nil), "float": 3.0, "int": 7,
			"bytes": []byte("hi"), "strings": []string{"a<b"}, "labels": map[string]string{"b": "2", "a": "1"}},
		json.Number("-1.5e3"),
		struct {
			Name  string `json:"name"`
			Empty string `json:"empty,omitempty"`
			When  time.Time
		}{Name: "n", When: time.Date(2026, 11, 29, 1, 2, 3, 4, time.UTC)},
	} {
		writesAsEncodingJSON(t, v)
	}
}

// TestEncodeJSONRefusesWhatIsNotANumber: a Number that is not digits is
// refused, as encoding/json refuses it, not written as the JSON it holds.
func TestEncodeJSONRefusesWhatIsNotANumber(t *testing.T) {
	for _, n := range []json.Number{"true", `"x"`, "{}", " 1 ", "1e", "0x10"} {
		if _, err := json.Marshal(n); err == nil {
			t.Fatalf("encoding/json wrote %q: the case tests nothing", n)
		}
		if b, err := schemas.EncodeJSON(n); err == nil {
			t.Errorf("EncodeJSON wrote %q as %s", n, b)
		}
	}
}
