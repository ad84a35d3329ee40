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

// The scheduler's decoding of a status write to a bound pod.
func BenchmarkPodPhaseAfter(b *testing.B) {
	o := benchPod(b)
	prev := kinds.PodOrNil(o)
	next := *o
	for b.Loop() {
		if kinds.PodPhaseAfter(&next, o, prev) == nil {
			b.Fatal("not decoded")
		}
	}
}
