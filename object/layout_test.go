package object

import (
	"bytes"
	stdjson "encoding/json"
	"reflect"
	"strings"
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

// EncodeLayoutOver writes what EncodeLayout writes, byte for byte, for a
// change to an object whose parts came from a store, whichever of them
// the change keeps; and a kept part is written as prev holds it.
func TestEncodeLayoutOver(t *testing.T) {
	pod, err := Decode(readPod(t))
	if err != nil {
		t.Fatal(err)
	}
	bare := &Object{APIVersion: "v1", Kind: "Pod", Spec: stdjson.RawMessage(`{"a":"<b>"}`)}
	onlyFields := &Object{APIVersion: "v1", Kind: "Pod", Metadata: Meta{ManagedFields: stdjson.RawMessage(`[{"manager":"m"}]`)}}
	starts := map[string]*Object{
		"a stored pod":        pod,
		"every part":          layoutCase("p", `[{"manager":"<m>"}]`, `{"nodeName":"n&m"}`, "{\"phase\":\"Running\",\"m\":\"\u2028\"}"),
		"no managed fields":   layoutCase("p", "", `{"nodeName":"n"}`, `{"phase":"Running"}`),
		"no spec":             layoutCase("p", `[]`, "", `{"phase":"Pending"}`),
		"empty metadata":      bare,
		"managed fields only": onlyFields,
		"metadata alone":      layoutCase("p", "", "", ""),
		"a null status":       layoutCase("p", `[]`, `{}`, `null`),
		"spaces and escapes":  layoutCase("p", `[ {"manager" : "<m>"} ]`, `{ "a" : "x&y" }`, `{"s": 1}`),
	}
	changes := map[string]func(o *Object){
		"nothing":        func(*Object) {},
		"the status":     func(o *Object) { o.Status = stdjson.RawMessage(`{"phase":"Failed","reason":"<x>"}`) },
		"the spec":       func(o *Object) { o.Spec = stdjson.RawMessage(`{"nodeName":"other"}`) },
		"managed fields": func(o *Object) { o.Metadata.ManagedFields = stdjson.RawMessage(`[{"manager":"k"}]`) },
		"the metadata":   func(o *Object) { o.Metadata.Labels = map[string]string{"x": "&"} },
		"every part": func(o *Object) {
			o.Status, o.Spec = stdjson.RawMessage(`{"a":1}`), stdjson.RawMessage(`{"b":2}`)
			o.Metadata.ManagedFields = stdjson.RawMessage(`[]`)
		},
		"a status dropped": func(o *Object) { o.Status = nil },
		"a status spelled otherwise": func(o *Object) {
			o.Status = stdjson.RawMessage("{ \"m\" : \"\xff\\u00e9\\/\", \"m\":1e3, \"n\":[ 1.50 , -0 ], \"s\":\"\u2029<>&\"}")
		},
	}
	for sname, start := range starts {
		for cname, change := range changes {
			t.Run(sname+", "+cname, func(t *testing.T) {
				prev := asStored(t, start)
				n := prev.Clone()
				change(n)
				want, wantLayout, err := EncodeLayout(n)
				if err != nil {
					t.Fatal(err)
				}
				got, l, err := EncodeLayoutOver(n, prev)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) || l != wantLayout {
					t.Fatalf("EncodeLayoutOver wrote\n%s %+v\nEncodeLayout\n%s %+v", got, l, want, wantLayout)
				}
			})
		}
	}
}

// A part kept from prev is written as prev holds it, not read again: a
// part spaced there stays spaced, and the rest is written as Encode
// writes it. A part that fails to encode still fails.
func TestEncodeLayoutOverKeepsPartsAsTheyAre(t *testing.T) {
	prev := layoutCase("p", `[ {"manager" : "m"} ]`, `{ "a" : "x" }`, `{ "s" : 1 }`)
	n := prev.Clone()
	n.Status = stdjson.RawMessage(`{ "s" : 2 }`)
	got, l, err := EncodeLayoutOver(n, prev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","labels":{"app":"a\u003cb\u003e"},` +
		`"managedFields":[ {"manager" : "m"} ]},"spec":{ "a" : "x" },"status":{"s":2}}`
	if string(got) != want {
		t.Fatalf("wrote\n%s\nwant\n%s", got, want)
	}
	back, err := Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if parts, err := DecodeLayout(got, l); err != nil || !reflect.DeepEqual(parts, back) {
		t.Fatalf("decoded by layout %+v: %+v, %v; whole: %+v", l, parts, err, back)
	}
	if !SameJSON(back.Spec, prev.Spec) || !SameJSON(back.Status, n.Status) || !SameJSON(back.Metadata.ManagedFields, prev.Metadata.ManagedFields) {
		t.Fatalf("read back %+v", back)
	}
	n.Status = stdjson.RawMessage(`{"s":`)
	if _, _, err := EncodeLayoutOver(n, prev); err == nil || !strings.Contains(err.Error(), "status") {
		t.Fatalf("an invalid status changed by the write: %v, want an error naming the status", err)
	}
}

// A node's status write: the pod as stored, a new status.
func BenchmarkEncodePodStatusOver(b *testing.B) {
	prev, err := Decode(readPod(b))
	if err != nil {
		b.Fatal(err)
	}
	next := prev.Clone()
	next.Status = stdjson.RawMessage(`{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-30T04:16:32Z"}],"hostIP":"127.0.0.1","podIP":"127.0.0.1","startTime":"2026-11-30T04:16:32Z"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := EncodeLayoutOver(next, prev); err != nil {
			b.Fatal(err)
		}
	}
}
