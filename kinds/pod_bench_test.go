package kinds_test

import (
	"os"
	"testing"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func BenchmarkBoundNode(b *testing.B) {
	data, _ := os.ReadFile("../object/testdata/pod.json")
	o, err := object.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		kinds.BoundNode(o)
	}
}
