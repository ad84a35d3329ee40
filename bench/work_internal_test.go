package bench

import (
	"context"
	"io"
	"maps"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A process's metrics give its reconciles (every controller and outcome
// of the histogram) and its writes by stream.
func TestFromMetrics(t *testing.T) {
	const hist = "# TYPE homeostat_reconcile_duration_seconds histogram\n"
	const writes = "# TYPE homeostat_bus_writes_total counter\n"
	for _, c := range []struct {
		doc        string
		text       string
		reconciles float64
		writes     map[string]float64
	}{
		{"neither", "# HELP x\nother_total 3\n", -1, map[string]float64{}},
		{"reconciles of every controller and outcome add up", hist +
			`homeostat_reconcile_duration_seconds_bucket{controller="a",result="ok",le="+Inf"} 3` + "\n" +
			`homeostat_reconcile_duration_seconds_count{controller="a",result="ok"} 3` + "\n" +
			`homeostat_reconcile_duration_seconds_count{controller="b",result="error"} 4` + "\n", 7, map[string]float64{}},
		{"writes by stream", writes +
			`homeostat_bus_writes_total{stream="pods"} 10000` + "\n" +
			`homeostat_bus_writes_total{stream="queue replicaset"} 2.5e+03` + "\n", -1,
			map[string]float64{"pods": 10000, "queue replicaset": 2500}},
		{"a longer name with the prefix is another metric", writes + `homeostat_bus_writes_total{stream="pods"} 1` + "\n" +
			"homeostat_bus_writes_total_extra 9\n", -1, map[string]float64{"pods": 1}},
	} {
		fams, err := scrape(context.Background(), func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(c.text)), nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		reconciles, writes := fromMetrics(fams)
		if reconciles != c.reconciles || !maps.Equal(writes, c.writes) {
			t.Errorf("%s: got %v reconciles and writes %v, want %v and %v", c.doc, reconciles, writes, c.reconciles, c.writes)
		}
	}
}

func TestSince(t *testing.T) {
	before := []Work{{Name: "controllers-1", CPU: time.Second, Reconciles: 10, Writes: map[string]float64{"pods": 5, "history": 1}},
		{Name: "scheduler", CPU: 2 * time.Second, Reconciles: -1, Writes: map[string]float64{"leases": 3}}}
	after := []Work{{Name: "controllers-1", CPU: 3 * time.Second, Reconciles: 25, Writes: map[string]float64{"pods": 15, "history": 1, "events": 2}},
		{Name: "scheduler", CPU: 5 * time.Second, Reconciles: -1}}
	got := since(before, after)
	want := []Work{{Name: "controllers-1", CPU: 2 * time.Second, Reconciles: 15, Writes: map[string]float64{"pods": 10, "events": 2}},
		// A reading that failed afterwards stays unknown.
		{Name: "scheduler", CPU: 3 * time.Second, Reconciles: -1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// A reading that failed afterwards stays unknown rather than negative.
	if got := since([]Work{{Name: "c", Reconciles: 4}}, []Work{{Name: "c", Reconciles: -1}}); got[0].Reconciles != -1 {
		t.Errorf("unknown after: %+v", got[0])
	}
}

// The first list is the first measured, whatever the others were: the
// median must not reorder what it reads.
func TestPercentilesLeaveTheirInput(t *testing.T) {
	xs := []time.Duration{5, 1, 4, 2, 3}
	if p50, p99 := percentiles(xs); p50 != 3 || p99 != 5 {
		t.Fatalf("p50 %v p99 %v", p50, p99)
	}
	if xs[0] != 5 || xs[1] != 1 {
		t.Fatalf("percentiles reordered its input: %v", xs)
	}
}

// The machine's busy time is every state but idle and iowait, and guest
// time is not counted twice.
func TestParseCPULine(t *testing.T) {
	cases := []struct {
		line        string
		busy, total time.Duration
	}{
		{"cpu  100 5 50 800 20 3 2 10 40 0\n", 170 * time.Second / 100, 990 * time.Second / 100},
		{"cpu  1 2 3 4", 6 * time.Second / 100, 10 * time.Second / 100},
		{"cpu  1 x 3 4", 0, 0},
	}
	for _, c := range cases {
		if busy, total := parseCPULine(c.line); busy != c.busy || total != c.total {
			t.Errorf("%q: busy %s of %s, want %s of %s", c.line, busy, total, c.busy, c.total)
		}
	}
}

// Runs follow one another in the bench's process, so each reports its own
// peak: memory an earlier run touched and freed does not count.
func TestResetPeak(t *testing.T) {
	const size = 256 << 20
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = 1
	}
	touched := peakRSS(os.Getpid())
	runtime.KeepAlive(buf)
	buf = nil
	resetPeak()
	after := peakRSS(os.Getpid())
	if touched == 0 {
		t.Fatal("no VmHWM in /proc/self/status: the bench's peaks need Linux")
	}
	if after > touched-size/2 {
		t.Fatalf("peak %d MiB after resetPeak, %d MiB before it with %d MiB freed: /proc/self/clear_refs did not start it again (the bench needs it writable)",
			after>>20, touched>>20, size>>20)
	}
}
