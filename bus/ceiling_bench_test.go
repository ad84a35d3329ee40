package bus_test

import (
	"context"
	"sort"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
)

// BenchmarkWriteCeiling measures the store's write ceiling (async,
// revision-checked publishes of 256 bytes to one bucket) on one server
// and on a three-server cluster with three replicas, all in this process:
// what one stream, and so one Raft leader, takes. It reports the median
// of three measures of 50,000 writes.
func BenchmarkWriteCeiling(b *testing.B) {
	for _, c := range []struct {
		name string
		conn func(testing.TB) *bus.Conn
	}{
		{"one-server", func(t testing.TB) *bus.Conn { return bustest.Conn(t) }},
		{"three-servers-R3", func(t testing.TB) *bus.Conn { return bustest.NewCluster(t).Conn(t) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			conn := c.conn(b)
			var rates []float64
			for b.Loop() {
				rates = rates[:0]
				for range 3 {
					r, err := conn.MeasureWriteCeiling(context.Background(), 50000, make([]byte, 256))
					if err != nil {
						b.Fatal(err)
					}
					rates = append(rates, r)
				}
			}
			sort.Float64s(rates)
			b.ReportMetric(rates[1], "writes/s")
		})
	}
}
