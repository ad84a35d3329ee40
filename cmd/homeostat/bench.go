package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/bench"
)

func newBench() *cobra.Command {
	var nodes, replicas, deployments, per, runs int
	var timeout time.Duration
	var cpuProfile string
	var noHistory bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure convergence at scale on simulated nodes, against the store's own ceiling",
		Long: `bench starts an embedded NATS server, measures its write ceiling, then runs
the controllers, the scheduler and simulated nodes as separate processes and
times two scenarios from an empty store: one Deployment of --replicas pods,
and --deployments Deployments of --per pods.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			progress := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "  "+f+"\n", a...) }
			fmt.Fprintf(out, "machine: %d cores, %s/%s, %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
			for _, sc := range []struct{ d, r int }{{1, replicas}, {deployments, per}} {
				if sc.d == 0 || sc.r == 0 {
					continue
				}
				var results []*bench.Result
				for run := range max(runs, 1) {
					cfg := bench.Config{Exe: exe, Nodes: nodes, Deployments: sc.d, Replicas: sc.r, Timeout: timeout, Progress: progress, NoHistory: noHistory}
					if cpuProfile != "" {
						cfg.CPUProfile = filepath.Join(cpuProfile, fmt.Sprintf("%dx%d-run%d", sc.d, sc.r, run+1))
						if err := os.MkdirAll(cfg.CPUProfile, 0o755); err != nil {
							return err
						}
					}
					res, err := bench.Run(cmd.Context(), cfg)
					if err != nil {
						return err
					}
					report(out, res)
					results = append(results, res)
				}
				if len(results) > 1 {
					summarize(out, results)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&nodes, "nodes", 1000, "simulated nodes")
	f.IntVar(&replicas, "replicas", 10000, "replicas of the single Deployment (0 skips the scenario)")
	f.IntVar(&deployments, "deployments", 1000, "number of small Deployments (0 skips the scenario)")
	f.IntVar(&per, "per", 10, "replicas of each small Deployment")
	f.DurationVar(&timeout, "timeout", 15*time.Minute, "give up on a scenario after this long")
	f.IntVar(&runs, "runs", 1, "runs of each scenario; with more than one, the medians with their least and greatest follow")
	f.StringVar(&cpuProfile, "cpuprofile", "", "directory where each component writes a CPU profile of each run (<scenario>-run<n>/<component>-<pid>.prof)")
	f.BoolVar(&noHistory, "no-reconcile-history", false, "run the controllers without their reconcile history (to measure what it costs)")
	return cmd
}

// summarize prints the medians of several runs of a scenario, with the
// least and greatest of each.
func summarize(out io.Writer, rs []*bench.Result) {
	fig := func(f func(*bench.Result) float64) bench.Spread {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return bench.SpreadOf(xs)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Fprintf(out, "\n%s: median of %d runs (least–greatest)\n", rs[0].Scenario, len(rs))
	line := func(name, unit string, s bench.Spread) {
		fmt.Fprintf(out, "  %-26s %.0f%s (%.0f–%.0f)\n", name, s.Median, unit, s.Min, s.Max)
	}
	line("all Running after", " ms", fig(func(r *bench.Result) float64 { return ms(r.Elapsed) }))
	line("throughput", " pods/s", fig(func(r *bench.Result) float64 { return r.PodsPerSec }))
	line("created -> Running p50", " ms", fig(func(r *bench.Result) float64 { return ms(r.P50) }))
	line("created -> Running p99", " ms", fig(func(r *bench.Result) float64 { return ms(r.P99) }))
	line("store ceiling", " writes/s", fig(func(r *bench.Result) float64 { return r.CeilingWrites }))
	s := fig(func(r *bench.Result) float64 { return 100 * r.Ratio })
	fmt.Fprintf(out, "  %-26s %.1f%% (%.1f–%.1f)\n", "throughput / ceiling", s.Median, s.Min, s.Max)
	s = fig(func(r *bench.Result) float64 { return r.TotalWritesPerPod })
	fmt.Fprintf(out, "  %-26s %.2f (%.2f–%.2f)\n", "store writes per pod", s.Median, s.Min, s.Max)
}

func report(out io.Writer, r *bench.Result) {
	fmt.Fprintf(out, "\n%s\n", r.Scenario)
	fmt.Fprintf(out, "  all %d pods Running after   %s\n", r.Pods, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "  throughput                  %.0f pods/s\n", r.PodsPerSec)
	fmt.Fprintf(out, "  pod created -> Running      p50 %s   p99 %s\n", r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond))
	fmt.Fprintf(out, "  store ceiling               %.0f writes/s (async, revision-checked) = %.0f pods/s at 3 writes a pod\n", r.CeilingWrites, r.CeilingPods)
	fmt.Fprintf(out, "  throughput / ceiling        %.1f%%\n", 100*r.Ratio)
	fmt.Fprintf(out, "  store writes per pod        %.2f, at %.1f%% of the ceiling's rate\n", r.TotalWritesPerPod, 100*r.WriteShare)
	streams := make([]string, 0, len(r.WritesPerPod))
	for s := range r.WritesPerPod {
		streams = append(streams, s)
	}
	sort.Slice(streams, func(i, j int) bool { return r.WritesPerPod[streams[i]] > r.WritesPerPod[streams[j]] })
	for _, s := range streams {
		fmt.Fprintf(out, "    %-30s %.2f\n", s, r.WritesPerPod[s])
	}
	names := make([]string, 0, len(r.PeakRSS))
	for n := range r.PeakRSS {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(out, "  peak memory %-32s %d MiB\n", n, r.PeakRSS[n]>>20)
	}
}
