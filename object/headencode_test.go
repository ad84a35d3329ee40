package object

import (
	"bytes"
	stdjson "encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	json "github.com/go-json-experiment/json/v1"
)

// TestEncodeAsTheEncoder: Encode, which writes the head by hand where it
// can, writes every object byte for byte as json.Marshal of the envelope
// does (or fails where it fails), over random objects whose strings,
// times and parts need escaping, reformatting or refusing; the hand-
// written path takes most of them.
func TestEncodeAsTheEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 30))
	strs := []string{"", "a", "web-7d4b9c8f6d-x2k9q", "example.com/owner", "with space", "0", "a~b_c.d",
		`quote"d`, `back\slash`, "a&b", "x>y", "p<q", "tab\there", "ünï", "\u2028", "line\nbreak", "\x7f", string([]byte{0xff, 'a'})}
	str := func() string {
		if r.IntN(50) > 0 {
			return strs[r.IntN(7)] // most need no escaping
		}
		return strs[r.IntN(len(strs))]
	}
	strMap := func() map[string]string {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string]string{}
		}
		m := map[string]string{}
		for range 1 + r.IntN(4) {
			m[str()] = str()
		}
		return m
	}
	zone := time.FixedZone("", 2*3600)
	times := []time.Time{{}, time.Date(2026, 11, 30, 6, 44, 8, 0, time.UTC), time.Date(2026, 11, 30, 6, 44, 8, 120_000_000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, zone)}
	refused := []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}
	when := func() time.Time {
		if r.IntN(30) == 0 {
			return refused[r.IntN(len(refused))]
		}
		return times[r.IntN(len(times))]
	}
	parts := []stdjson.RawMessage{nil, stdjson.RawMessage(`{"a":1}`), stdjson.RawMessage(`{ "b" : [1, 2],"c":"<x>" }`),
		stdjson.RawMessage(`null`), stdjson.RawMessage(`{"d":"\u00e9\u2028"}`), stdjson.RawMessage(`{"e":`)}
	boolPtr := func() *bool {
		if r.IntN(3) == 0 {
			return nil
		}
		v := r.IntN(2) == 0
		return &v
	}
	handWritten := 0
	const n = 20000
	for i := range n {
		o := &Object{APIVersion: str(), Kind: str(), Metadata: Meta{Name: str(), GenerateName: str(), Namespace: str(),
			UID: str(), ResourceVersion: str(), Generation: int64(r.IntN(3)) - 1, CreationTimestamp: when(),
			Labels: strMap(), Annotations: strMap()}}
		m := &o.Metadata
		if r.IntN(3) == 0 {
			ts := when()
			m.DeletionTimestamp = &ts
		}
		if r.IntN(3) == 0 {
			g := int64(r.IntN(60))
			m.DeletionGracePeriodSeconds = &g
		}
		for range r.IntN(3) {
			m.OwnerReferences = append(m.OwnerReferences, OwnerReference{APIVersion: str(), Kind: str(), Name: str(), UID: str(),
				Controller: boolPtr(), BlockOwnerDeletion: boolPtr()})
		}
		if r.IntN(4) == 0 {
			m.OwnerReferences = []OwnerReference{}
		}
		for range r.IntN(3) {
			m.Finalizers = append(m.Finalizers, str())
		}
		m.ManagedFields, o.Spec, o.Status = parts[r.IntN(len(parts))], parts[r.IntN(len(parts))], parts[r.IntN(len(parts))]

		want, wantErr := json.Marshal((*envelope)(o))
		got, err := Encode(o)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("object %d %+v:\nEncode   %s (%v)\nencoder  %s (%v)", i, o, got, err, want, wantErr)
		}
		if _, ok := appendHead(nil, o); ok {
			handWritten++
		}
	}
	if handWritten < n/10 {
		t.Fatalf("the head was written by hand for %d objects of %d", handWritten, n)
	}
}

// BenchmarkEncodeHead: a pod's head, by hand and by the encoder.
func BenchmarkEncodeHead(b *testing.B) {
	o, err := Decode(readPod(b))
	if err != nil {
		b.Fatal(err)
	}
	head := *o
	head.Metadata.ManagedFields, head.Spec, head.Status = nil, nil, nil
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := appendEncodedHead(make([]byte, 0, headSize(o)), o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal((*envelope)(&head)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
