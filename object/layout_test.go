package object

import (
	"bytes"
	stdjson "encoding/json"
	"reflect"
	"testing"
)

// layoutCase builds an object of the given parts (raw JSON, "" for none).
func layoutCase(name, mf, spec, status string) *Object {
	o := &Object{APIVersion: "v1", Kind: "Pod", Metadata: Meta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "a<b>"}}}
	if mf != "" {
		o.Metadata.ManagedFields = stdjson.RawMessage(mf)
	}
	if spec != "" {
		o.Spec = stdjson.RawMessage(spec)
	}
	if status != "" {
		o.Status = stdjson.RawMessage(status)
	}
	return o
}

// checkLayout holds that EncodeLayout writes what Encode writes (or fails
// where it fails), that its layout survives a header, and that decoding
// by the layout gives what decoding the whole does.
func checkLayout(t *testing.T, o *Object) Layout {
	t.Helper()
	want, wantErr := Encode(o)
	got, l, err := EncodeLayout(o)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("EncodeLayout: %v, Encode: %v", err, wantErr)
	}
	if err != nil {
		return Layout{}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeLayout wrote\n%s\nEncode\n%s", got, want)
	}
	if back := ParseLayout(l.String()); back != l {
		t.Fatalf("layout %+v read back as %+v", l, back)
	}
	if l != (Layout{}) && !l.fits(got) {
		t.Fatalf("layout %+v does not fit %s", l, got)
	}
	whole, err := Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := DecodeLayout(got, l)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parts, whole) {
		t.Fatalf("decoded by layout\n%+v\nwhole\n%+v", parts, whole)
	}
	return l
}

func TestLayoutAgreesWithWholeDecoding(t *testing.T) {
	pod, err := Decode(readPod(t))
	if err != nil {
		t.Fatal(err)
	}
	withFields := layoutCase("f", "", `{"a":1}`, "")
	withFields.Fields = map[string]stdjson.RawMessage{"data": stdjson.RawMessage(`{"k":"v"}`)}
	// Parts held as Encode writes them (as decoding stored bytes leaves
	// them) are laid out; others are decoded whole.
	cases := map[string]struct {
		o      *Object
		layout bool
	}{
		"a stored pod":              {pod, true},
		"every part":                {layoutCase("p", `[{"manager":"m"}]`, `{"nodeName":"n"}`, `{"phase":"Running"}`), true},
		"no managed fields":         {layoutCase("p", "", `{"nodeName":"n"}`, `{"phase":"Running"}`), true},
		"metadata alone":            {layoutCase("p", "", "", ""), true},
		"managed fields alone":      {layoutCase("p", `[]`, "", ""), true},
		"no spec":                   {layoutCase("p", `[]`, "", `{"phase":"Pending"}`), true},
		"no status":                 {layoutCase("p", `[]`, `{}`, ""), true},
		"spaces and HTML in parts":  {layoutCase("p", `[ {"manager" : "<m>"} ]`, `{ "a" : "x&y" }`, "{\"s\":\"\u2028\"}"), false},
		"a null spec":               {layoutCase("p", "", `null`, `{}`), false},
		"other top-level members":   {withFields, false},
		"an invalid status":         {layoutCase("p", "", `{}`, `{"a":`), false},
		"an invalid managed fields": {layoutCase("p", `[1,`, `{}`, ""), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if l := checkLayout(t, tc.o); (l != Layout{}) != tc.layout {
				t.Fatalf("layout %+v, want one: %v", l, tc.layout)
			}
		})
	}
}

// A layout that does not fit the bytes it comes with (another object's,
// one cut short, one shifted) is not trusted: the whole is decoded.
func TestLayoutThatDoesNotFitDecodesWhole(t *testing.T) {
	data, l, err := EncodeLayout(layoutCase("p", `[{"manager":"m"}]`, `{"nodeName":"n"}`, `{"phase":"Running"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := EncodeLayout(layoutCase("another-name", `[]`, `{"x":1}`, `{"phase":"Pending"}`))
	if err != nil {
		t.Fatal(err)
	}
	shifted := l
	shifted.Spec[0]++
	short := l
	short.Status[1]--
	whole, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]Layout{"another's": other, "shifted": shifted, "cut short": short, "none": {}, "garbled": ParseLayout("1,2,x")} {
		if bad.fits(data) {
			t.Errorf("%s layout fits", name)
		}
		got, err := DecodeLayout(data, bad)
		if err != nil || !reflect.DeepEqual(got, whole) {
			t.Errorf("%s layout: decoded %+v, %v; want %+v", name, got, err, whole)
		}
	}
}

func FuzzLayout(f *testing.F) {
	f.Add("p", `[{"manager":"m"}]`, `{"nodeName":"n"}`, `{"phase":"Running"}`)
	f.Add("q", "", `null`, `{ "a" : [1, 2] }`)
	f.Add("é<", `[]`, "", `"x"`)
	f.Fuzz(func(t *testing.T, name, mf, spec, status string) {
		o := layoutCase(name, mf, spec, status)
		checkLayout(t, o)
		// Decoded, its parts are held as Encode writes them: laid out.
		if data, err := Encode(o); err == nil {
			if d, err := Decode(data); err == nil && !bytes.Contains(data, []byte(":null")) {
				if l := checkLayout(t, d); l == (Layout{}) {
					t.Fatalf("no layout for %s", data)
				}
			}
		}
	})
}

func BenchmarkDecodePodByLayout(b *testing.B) {
	o, err := Decode(readPod(b))
	if err != nil {
		b.Fatal(err)
	}
	data, l, err := EncodeLayout(o)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeLayout(data, l); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePodLayout(b *testing.B) {
	o, err := Decode(readPod(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := EncodeLayout(o); err != nil {
			b.Fatal(err)
		}
	}
}
