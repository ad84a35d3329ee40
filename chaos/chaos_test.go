//go:build chaos

package chaos_test

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/chaos"
)

var (
	topologies = flag.String("chaos.topology", "single,cluster", "topologies to run, comma-separated: single, cluster")
	faults     = flag.Duration("chaos.faults", 40*time.Second, "how long each topology is broken")
	clients    = flag.Int("chaos.clients", 6, "concurrent clients")
	report     = flag.String("chaos.report", "", "append the reports to this file")
	keep       = flag.Bool("chaos.keep", false, "keep each run's directory (data and process logs) and print where it is")
	loadScale  = flag.Float64("chaos.load", 1, "scale of the read load (1: 5,000 lists and 2,000 watches at 200 at a time)")
)

// TestReadLoad opens and closes lists and watches at 200 at a time and
// fails on any error, or if the consumers they used stay behind.
func TestReadLoad(t *testing.T) {
	ctx := context.Background()
	bins, err := chaos.Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scale := func(n int) int { return max(1, int(float64(n)**loadScale)) }
	rep, err := chaos.ReadLoad(ctx, chaos.LoadOptions{Dir: runDir(t), Bin: bins.Homeostat, Objects: 200,
		Lists: scale(5000), Watches: scale(2000), Concurrency: 200, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	appendReport(rep.String())
	if rep.Failed() {
		t.Fatal("the read load broke something, above")
	}
}

func appendReport(s string) {
	if *report == "" {
		return
	}
	if f, err := os.OpenFile(*report, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		_, _ = f.WriteString(s + "\n")
		_ = f.Close()
	}
}

// runDir is where a run keeps its data and logs: removed after the test
// unless -chaos.keep.
func runDir(t *testing.T) string {
	if !*keep {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "chaos-"+strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run directory: %s", dir)
	return dir
}

// TestChaos runs the fault harness on each topology and fails on any
// linearizability violation, list or watch violation, lost write, server
// error, duplicate pod, surge past the bound, or failure to converge.
func TestChaos(t *testing.T) {
	ctx := context.Background()
	bins, err := chaos.Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, topo := range strings.Split(*topologies, ",") {
		t.Run(topo, func(t *testing.T) {
			rep, err := chaos.Run(ctx, chaos.Options{Topology: topo, Dir: runDir(t), Bin: bins.Homeostat, NATS: bins.NATS,
				Faults: *faults, Clients: *clients, Pace: 10 * time.Millisecond, Log: t.Logf,
				Corpora: []string{"../schemas/testdata/fuzz/FuzzValidate", "../manifest/testdata/fuzz/FuzzDecode"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + rep.String())
			appendReport(rep.String())
			if rep.Failed() {
				t.Fatal("the harness found the problems above")
			}
		})
	}
}
