package bench

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

func TestSumMetric(t *testing.T) {
	const name = "homeostat_reconcile_duration_seconds_count"
	for _, c := range []struct {
		doc  string
		text string
		want float64
	}{
		{"none", "# HELP x\nother_total 3\n", -1},
		{"labelled samples add up", name + `{controller="a",result="ok"} 3` + "\n" + name + `{controller="b",result="error"} 4.5` + "\n", 7.5},
		{"unlabelled", name + " 2\n", 2},
		{"a longer name with the prefix is another metric", name + "_extra 9\n" + name + " 1\n", 1},
		{"comments are not samples", "# TYPE " + name + " counter\n" + name + " 5\n", 5},
	} {
		if got := sumMetric(bufio.NewScanner(strings.NewReader(c.text)), name); got != c.want {
			t.Errorf("%s: got %v, want %v", c.doc, got, c.want)
		}
	}
}

func TestSince(t *testing.T) {
	before := []Work{{Name: "controllers-1", CPU: time.Second, Reconciles: 10}, {Name: "scheduler", CPU: 2 * time.Second, Reconciles: -1}}
	after := []Work{{Name: "controllers-1", CPU: 3 * time.Second, Reconciles: 25}, {Name: "scheduler", CPU: 5 * time.Second, Reconciles: -1}}
	got := since(before, after)
	want := []Work{{Name: "controllers-1", CPU: 2 * time.Second, Reconciles: 15}, {Name: "scheduler", CPU: 3 * time.Second, Reconciles: -1}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
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
