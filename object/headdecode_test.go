package object

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

// TestParseHeadAsTheDecoder: what parseHead reads of a head is what the
// reflective decoder reads, over heads the encoder wrote of random objects
// and the same heads changed as another writer might spell them (spaces,
// escapes, members reordered or twice, other numbers, nulls, cuts); it
// refuses every form it does not read alike, and reads most of what is
// written.
func TestParseHeadAsTheDecoder(t *testing.T) {
	g := newObjects(7, 11)
	read, n := 0, 0
	check := func(head []byte) {
		t.Helper()
		n++
		var want *decoding
		wantErr := unmarshal(head, &want)
		got, ok := parseHead(head)
		if !ok {
			return
		}
		read++
		if wantErr != nil {
			t.Fatalf("parseHead read %s, which the decoder refuses (%v)", head, wantErr)
		}
		if !sameDecoded(got, want) {
			t.Fatalf("%s:\nparseHead %+v\ndecoder   %+v", head, got, want)
		}
	}
	edits := []func([]byte) []byte{
		func(b []byte) []byte { return bytes.Replace(b, []byte(`,"`), []byte(`, "`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`":`), []byte(`" :`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`a`), []byte(`\u0061`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`:"a"`), []byte(`:"\u0061"`), 1) },
		func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"generation":1`), []byte(`"generation":1.0`), 1)
		},
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"generation":1`), []byte(`"generation":01`), 1) },
		func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"generation":-1`), []byte(`"generation":-1e0`), 1)
		},
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"uid":"a"`), []byte(`"uid":null`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"name":`), []byte(`"uid":"x","name":`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"labels":{`), []byte(`"labels":{"a":"1",`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`}]`), []byte(`,"extra":1}]`), 1) },
		func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"controller":true`), []byte(`"controller":1`), 1)
		},
		func(b []byte) []byte { return bytes.Replace(b, []byte(`,"kind":`), []byte(`,"kind":"x","kind":`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`Z"`), []byte(`"`), 1) },
		func(b []byte) []byte {
			return bytes.Replace(b, []byte(`{"apiVersion"`), []byte(`{"metadata":{},"apiVersion"`), 1)
		},
		func(b []byte) []byte { return b[:len(b)-1] },
		func(b []byte) []byte { return append(b, ' ') },
		func(b []byte) []byte { return append(b, 'x') },
		func(b []byte) []byte { return append(b[:len(b)-2:len(b)-2], `,"ownerReferences":[]}}`...) },
		func(b []byte) []byte { return append(b[:len(b)-2:len(b)-2], `,"finalizers":[]}}`...) },
		func(b []byte) []byte { return append(b[:len(b)-2:len(b)-2], `,"annotations":{}}}`...) },
	}
	const objs = 5000
	for range objs {
		o := g.object()
		o.Spec, o.Status, o.Metadata.ManagedFields = nil, nil, nil
		enc, err := Encode(o)
		if err != nil {
			continue
		}
		check(enc)
		// What the encoder writes by hand is read by hand.
		if _, handWritten := appendHead(nil, o); handWritten {
			if _, ok := parseHead(enc); !ok {
				t.Fatalf("parseHead refused %s, written by hand", enc)
			}
		}
		for _, edit := range edits {
			if e := edit(bytes.Clone(enc)); !bytes.Equal(e, enc) {
				check(e)
			}
		}
	}
	if read < objs/2 {
		t.Fatalf("parseHead read %d heads of %d", read, n)
	}
}

// sameDecoded compares decoded heads, their times as instants in the same
// offset (a parsed zone is a new location each time).
func sameDecoded(a, b *decoding) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	sameTime := func(s, t *time.Time) bool {
		_, so := s.Zone()
		_, to := t.Zone()
		ok := s.Equal(*t) && so == to && s.IsZero() == t.IsZero()
		*s, *t = time.Time{}, time.Time{}
		return ok
	}
	if !sameTime(&x.Metadata.CreationTimestamp, &y.Metadata.CreationTimestamp) {
		return false
	}
	if (x.Metadata.DeletionTimestamp == nil) != (y.Metadata.DeletionTimestamp == nil) {
		return false
	}
	if x.Metadata.DeletionTimestamp != nil {
		s, t := *x.Metadata.DeletionTimestamp, *y.Metadata.DeletionTimestamp
		if !sameTime(&s, &t) {
			return false
		}
		x.Metadata.DeletionTimestamp, y.Metadata.DeletionTimestamp = nil, nil
	}
	return reflect.DeepEqual(x, y)
}

// BenchmarkParseHead: a pod's head, by parseHead and by the decoder.
func BenchmarkParseHead(b *testing.B) {
	o, err := Decode(readPod(b))
	if err != nil {
		b.Fatal(err)
	}
	o.Spec, o.Status, o.Metadata.ManagedFields = nil, nil, nil
	head, err := Encode(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parseHead", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := parseHead(head); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var d *decoding
			if err := unmarshal(head, &d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
