package object

import (
	"bytes"
	stdjson "encoding/json"
	"os"
	"reflect"
	"testing"

	json "github.com/go-json-experiment/json/v1"
)

// readPod is a pod as the store holds it (2.2 KB, managed fields included).
func readPod(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/pod.json")
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// asStored is o encoded and decoded again: its parts as a store holds
// them.
func asStored(tb testing.TB, o *Object) *Object {
	tb.Helper()
	b, err := Encode(o)
	if err != nil {
		tb.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		tb.Fatal(err)
	}
	return back
}

// The codec is encoding/json's, run faster: on inputs that tell JSON codecs
// apart, it decodes what the standard library decodes, fails where it
// fails, and encodes the same bytes.
func TestCodecAgreesWithEncodingJSON(t *testing.T) {
	cases := map[string]string{
		"a stored pod":               string(readPod(t)),
		"HTML and line breaks":       `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a<b>&c","labels":{"k":"é\u2028"}}}`,
		"names in another case":      `{"Kind":"X","METADATA":{"Name":"n"}}`,
		"a name given twice":         `{"kind":"A","kind":"B","metadata":{"name":"n"}}`,
		"invalid UTF-8":              "{\"metadata\":{\"name\":\"\xff\"}}",
		"raw members with space":     `{"spec":null,"status":{ "a" : [1, 2] }}`,
		"a time with an offset":      `{"metadata":{"name":"n","creationTimestamp":"2026-11-26T01:02:03.5+01:00"}}`,
		"unknown members":            `{"metadata":{"name":"n","whatever":{"x":1}},"other":2}`,
		"a number of the wrong type": `{"metadata":{"generation":1.5}}`,
		"a string for a number":      `{"metadata":{"generation":"1"}}`,
		"an array for metadata":      `{"metadata":[]}`,
		"not an object":              `[1]`,
		"cut short":                  `{"metadata":{"name":"n"`,
		"trailing data":              `{"kind":"A"} {}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			var want, got *envelope
			wantErr := stdjson.Unmarshal([]byte(in), &want)
			gotErr := json.Unmarshal([]byte(in), &got)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("encoding/json says %v, the codec %v", wantErr, gotErr)
			}
			if wantErr != nil {
				return
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("decoded as\n%+v\nnot\n%+v", got, want)
			}
			wantOut, err1 := stdjson.Marshal(want)
			gotOut, err2 := json.Marshal(got)
			if err1 != nil || err2 != nil || !bytes.Equal(wantOut, gotOut) {
				t.Fatalf("encoded as\n%s (%v)\nnot\n%s (%v)", gotOut, err2, wantOut, err1)
			}
		})
	}
}

// A stored pod survives Decode and Encode byte for byte.
func TestPodRoundTrip(t *testing.T) {
	in := readPod(t)
	o, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encode(o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Fatalf("round trip differs:\n%s\n%s", in, out)
	}
}

func BenchmarkDecodePod(b *testing.B) {
	data := readPod(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePod(b *testing.B) {
	o, err := Decode(readPod(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(o); err != nil {
			b.Fatal(err)
		}
	}
}

// A bind: the same spec but for its node.
func BenchmarkSameJSONSpecs(b *testing.B) {
	o, err := Decode(readPod(b))
	if err != nil {
		b.Fatal(err)
	}
	bound := bytes.Replace(o.Spec, []byte(`"nodeName":"`), []byte(`"nodeName":"x`), 1)
	if bytes.Equal(bound, o.Spec) {
		b.Fatal("the fixture's spec has no nodeName")
	}
	b.ReportAllocs()
	for b.Loop() {
		if SameJSON(o.Spec, bound) {
			b.Fatal("specs of two nodes compare equal")
		}
	}
}
