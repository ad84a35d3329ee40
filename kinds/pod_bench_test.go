package kinds_test

import (
	"os"
	"testing"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// benchPod is the stored pod the benchmarks read.
func benchPod(b *testing.B) *object.Object {
	data, _ := os.ReadFile("../object/testdata/pod.json")
	o, err := object.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	return o
}

func BenchmarkBoundNode(b *testing.B) {
	o := benchPod(b)
	for b.Loop() {
		kinds.BoundNode(o)
	}
}

// The typed decoding informers keep pods with, once per change.
func BenchmarkDecodePod(b *testing.B) {
	o := benchPod(b)
	for b.Loop() {
		if _, err := kinds.DecodePod(o); err != nil {
			b.Fatal(err)
		}
	}
}

// An informer's decoding of a status write to a bound pod: whole, as the
// controllers keep pods, or its phase alone, as the scheduler does.
func BenchmarkStatusWrite(b *testing.B) {
	o := benchPod(b)
	prev := kinds.PodOrNil(o)
	next := *o
	for _, dec := range []struct {
		name string
		fn   func(o, old *object.Object, oldValue any) any
	}{{"PodAfter", kinds.PodAfter}, {"PodPhaseAfter", kinds.PodPhaseAfter}} {
		b.Run(dec.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if dec.fn(&next, o, prev) == nil {
					b.Fatal("not decoded")
				}
			}
		})
	}
}
