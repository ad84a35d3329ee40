package bench_test

import (
	"testing"

	"github.com/homeostat/homeostat/bench"
)

func TestSpreadOf(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want bench.Spread
	}{
		{nil, bench.Spread{}},
		{[]float64{3}, bench.Spread{Median: 3, Min: 3, Max: 3}},
		{[]float64{5, 1, 3}, bench.Spread{Median: 3, Min: 1, Max: 5}},
		{[]float64{4, 1, 3, 10}, bench.Spread{Median: 3.5, Min: 1, Max: 10}},
	} {
		if got := bench.SpreadOf(c.xs); got != c.want {
			t.Errorf("SpreadOf(%v) = %+v, want %+v", c.xs, got, c.want)
		}
	}
}
