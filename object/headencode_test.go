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
	g := newObjects(12, 30)
	handWritten := 0
	const n = 20000
	for i := range n {
		o := g.object()
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

// objects makes random objects whose strings, times and parts need
// escaping, reformatting or refusing now and then.
type objects struct{ r *rand.Rand }

func newObjects(seed1, seed2 uint64) *objects { return &objects{rand.New(rand.NewPCG(seed1, seed2))} }

var (
	testStrings = []string{"", "a", "web-7d4b9c8f6d-x2k9q", "example.com/owner", "with space", "0", "a~b_c.d",
		`quote"d`, `back\slash`, "a&b", "x>y", "p<q", "tab\there", "ünï", "\u2028", "line\nbreak", "\x7f", string([]byte{0xff, 'a'})}
	testTimes = []time.Time{{}, time.Date(2026, 11, 30, 6, 44, 8, 0, time.UTC), time.Date(2026, 11, 30, 6, 44, 8, 120_000_000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 2*3600)), time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", -(5*3600+30*60))),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600-60)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -(24*3600-60)))}
	// Years beyond four digits, in their own zone if not in UTC, and zones
	// a day or more from UTC.
	refusedTimes = []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).In(time.FixedZone("", 2*3600)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -24*3600))}
	testParts = []stdjson.RawMessage{nil, stdjson.RawMessage(`{"a":1}`), stdjson.RawMessage(`{ "b" : [1, 2],"c":"<x>" }`),
		stdjson.RawMessage(`null`), stdjson.RawMessage(`{"d":"\u00e9\u2028"}`), stdjson.RawMessage(`{"e":`)}
)

func (g *objects) str() string {
	if g.r.IntN(50) > 0 {
		return testStrings[g.r.IntN(7)] // most need no escaping
	}
	return testStrings[g.r.IntN(len(testStrings))]
}

func (g *objects) strMap() map[string]string {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{}
	for range 1 + g.r.IntN(4) {
		m[g.str()] = g.str()
	}
	return m
}

func (g *objects) time() time.Time {
	if g.r.IntN(30) == 0 {
		return refusedTimes[g.r.IntN(len(refusedTimes))]
	}
	return testTimes[g.r.IntN(len(testTimes))]
}

func (g *objects) boolPtr() *bool {
	if g.r.IntN(3) == 0 {
		return nil
	}
	return new(g.r.IntN(2) == 0)
}

func (g *objects) object() *Object {
	r := g.r
	o := &Object{APIVersion: g.str(), Kind: g.str(), Metadata: Meta{Name: g.str(), GenerateName: g.str(), Namespace: g.str(),
		UID: g.str(), ResourceVersion: g.str(), Generation: int64(r.IntN(3)) - 1, CreationTimestamp: g.time(),
		Labels: g.strMap(), Annotations: g.strMap()}}
	m := &o.Metadata
	if r.IntN(3) == 0 {
		m.DeletionTimestamp = new(g.time())
	}
	if r.IntN(3) == 0 {
		m.DeletionGracePeriodSeconds = new(int64(r.IntN(60)))
	}
	for range r.IntN(3) {
		m.OwnerReferences = append(m.OwnerReferences, OwnerReference{APIVersion: g.str(), Kind: g.str(), Name: g.str(), UID: g.str(),
			Controller: g.boolPtr(), BlockOwnerDeletion: g.boolPtr()})
	}
	if r.IntN(4) == 0 {
		m.OwnerReferences = []OwnerReference{}
	}
	for range r.IntN(3) {
		m.Finalizers = append(m.Finalizers, g.str())
	}
	m.ManagedFields, o.Spec, o.Status = testParts[r.IntN(len(testParts))], testParts[r.IntN(len(testParts))], testParts[r.IntN(len(testParts))]
	return o
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
