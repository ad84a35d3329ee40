package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/bench"
)

func newBench() *cobra.Command {
	var nodes, replicas, deployments, per, runs, controllers, schedulers int
	var timeout time.Duration
	var cpuProfile, keep string
	var noHistory, viaAPI bool
	var probe bench.Probe
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure convergence at scale on simulated nodes, against the store's own ceiling",
		Long: `bench starts a NATS server in a process of its own, measures its write
ceiling, then runs the controllers, the scheduler and simulated nodes as
separate processes and
times two scenarios from an empty store: one Deployment of --replicas pods,
and --deployments Deployments of --per pods. Each scenario runs --runs
times, and the medians with their least and greatest close it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			// The bench's watch of every pod shares the cores it measures:
			// its collector is paced as a server role's, not run tens of
			// times a second (a tenth of the bench's CPU). Its own peak
			// memory, which it reports, rises by as much.
			defer pace(cmd.Context(), rolePace)()
			out := cmd.OutOrStdout()
			progress := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "  "+f+"\n", a...) }
			fmt.Fprintf(out, "machine: %d cores, %s/%s, %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
			for i, sc := range []struct{ d, r int }{{1, replicas}, {deployments, per}} {
				if sc.d == 0 || sc.r == 0 {
					continue
				}
				var results []*bench.Result
				for run := range max(runs, 1) {
					cfg := bench.Config{Exe: exe, Nodes: nodes, Deployments: sc.d, Replicas: sc.r, Timeout: timeout, Progress: progress, NoHistory: noHistory,
						ViaAPI: viaAPI, APIProbes: viaAPI && i == 0, Probe: probe,
						Controllers: controllers, Schedulers: schedulers}
					if err := runDirs(&cfg, keep, cpuProfile, fmt.Sprintf("%dx%d-run%d", sc.d, sc.r, run+1)); err != nil {
						return err
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
	f.IntVar(&runs, "runs", 5, "runs of each scenario; with more than one, the medians with their least and greatest follow")
	f.StringVar(&cpuProfile, "cpuprofile", "", "directory where each component writes a CPU profile of each run's scenario, from the first create to the last pod Running (<scenario>-run<n>/<component>-<pid>.prof), and its live heap then (.heap)")
	f.StringVar(&keep, "keep", "", "directory that keeps each run's store and components' logs (<scenario>-run<n>/), instead of a temporary one")
	f.BoolVar(&noHistory, "no-reconcile-history", false, "run the controllers without their reconcile history (to measure what it costs)")
	f.BoolVar(&viaAPI, "via-api", false, "run the API too (TLS, client certificates, audit) and create the Deployments through it; after the first scenario, measure a list of its pods, paced creates from many clients, and delivery to many watchers")
	f.IntVar(&controllers, "controllers", 1, "controller processes sharing the work")
	f.IntVar(&schedulers, "schedulers", 1, "scheduler processes (one leads, the others stand by)")
	d := bench.DefaultProbe
	f.IntVar(&probe.CreateRate, "api-create-rate", d.CreateRate, "with --via-api: creates a second sent to the API")
	f.IntVar(&probe.CreateClients, "api-clients", d.CreateClients, "with --via-api: clients the creates are spread over")
	f.IntVar(&probe.Watchers, "api-watchers", d.Watchers, "with --via-api: watchers each write is delivered to")
	f.IntVar(&probe.WatchWrites, "api-watch-writes", d.WatchWrites, "with --via-api: writes delivered to the watchers")
	return cmd
}

// runDirs gives a run its directories: under keep for its store and logs
// (which must not hold an earlier run), and under cpuProfile for its
// profiles; each is left unset when its flag is.
func runDirs(cfg *bench.Config, keep, cpuProfile, name string) error {
	if keep != "" {
		cfg.Dir = filepath.Join(keep, name)
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return err
		}
		// Every run starts from an empty store.
		if entries, _ := os.ReadDir(cfg.Dir); len(entries) > 0 {
			return fmt.Errorf("--keep: %s is not empty; remove it or keep elsewhere", cfg.Dir)
		}
	}
	if cpuProfile != "" {
		cfg.CPUProfile = filepath.Join(cpuProfile, name)
		return os.MkdirAll(cfg.CPUProfile, 0o755)
	}
	return nil
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
	line("created -> bound p99", " ms", fig(func(r *bench.Result) float64 { return ms(r.Stages.BindP99) }))
	line("bound -> Running p99", " ms", fig(func(r *bench.Result) float64 { return ms(r.Stages.StartP99) }))
	line("bench's watch lag p99", " ms", fig(func(r *bench.Result) float64 { return ms(r.Stages.WatchLagP99) }))
	line("last pod created after", " ms", fig(func(r *bench.Result) float64 { return ms(r.Stages.LastCreated) }))
	line("last pod bound after", " ms", fig(func(r *bench.Result) float64 { return ms(r.Stages.LastBound) }))
	line("store ceiling", " writes/s", fig(func(r *bench.Result) float64 { return r.CeilingWrites }))
	s := fig(func(r *bench.Result) float64 { return 100 * r.Ratio })
	fmt.Fprintf(out, "  %-26s %.1f%% (%.1f–%.1f)\n", "throughput / ceiling", s.Median, s.Min, s.Max)
	s = fig(func(r *bench.Result) float64 { return r.TotalWritesPerPod })
	fmt.Fprintf(out, "  %-26s %.2f (%.2f–%.2f)\n", "store writes per pod", s.Median, s.Min, s.Max)
	for _, w := range byValue(writerTotals(rs[0])) {
		s = fig(func(r *bench.Result) float64 { return writerTotals(r)[w] })
		fmt.Fprintf(out, "    %-24s %.2f (%.2f–%.2f)\n", "by "+w, s.Median, s.Min, s.Max)
	}
	if len(rs[0].WritesByWriter) > 0 {
		s = fig(func(r *bench.Result) float64 { return r.Uncounted })
		fmt.Fprintf(out, "    %-24s %.2f (%.2f–%.2f)\n", "by no writer read", roundedZero(s.Median), roundedZero(s.Min), roundedZero(s.Max))
	}
	if rs[0].API == nil {
		return
	}
	api := func(f func(*bench.APIResult) time.Duration) bench.Spread {
		return fig(func(r *bench.Result) float64 { return ms(f(r.API)) })
	}
	fmt.Fprintf(out, "  API (ms):\n")
	apiLine := func(name string, s bench.Spread) {
		fmt.Fprintf(out, "    %-24s %.1f (%.1f–%.1f)\n", name, s.Median, s.Min, s.Max)
	}
	apiLine("list of every pod", api(func(a *bench.APIResult) time.Duration { return a.List }))
	apiLine("the first list", api(func(a *bench.APIResult) time.Duration { return a.ListFirst }))
	apiLine("create p50", api(func(a *bench.APIResult) time.Duration { return a.CreateP50 }))
	apiLine("create p99", api(func(a *bench.APIResult) time.Duration { return a.CreateP99 }))
	apiLine("watch delivery p50", api(func(a *bench.APIResult) time.Duration { return a.WatchP50 }))
	apiLine("watch delivery p99", api(func(a *bench.APIResult) time.Duration { return a.WatchP99 }))
}

// byValue is the keys of m, greatest value first.
func byValue(m map[string]float64) []string {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	return keys
}

// roundedZero is x, but 0 where it prints as zero: a residue of
// -0.001 is not "-0.00".
func roundedZero(x float64) float64 {
	if math.Abs(x) < 0.005 {
		return 0
	}
	return x
}

// writerTotals is each writer's writes per pod, all streams together.
func writerTotals(r *bench.Result) map[string]float64 {
	out := map[string]float64{}
	for w, per := range r.WritesByWriter {
		for _, n := range per {
			out[w] += n
		}
	}
	return out
}

// reportWriters prints the writes per pod by the component that made
// them, each with its streams.
func reportWriters(out io.Writer, r *bench.Result) {
	if len(r.WritesByWriter) == 0 {
		return
	}
	fmt.Fprintf(out, "  store writes per pod by writer (as each counted its own)\n")
	totals := writerTotals(r)
	for _, w := range byValue(totals) {
		var parts []string
		for _, s := range byValue(r.WritesByWriter[w]) {
			if n := r.WritesByWriter[w][s]; n >= 0.005 {
				parts = append(parts, fmt.Sprintf("%s %.2f", s, n))
			}
		}
		fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("    %-30s %.2f  %s", w, totals[w], strings.Join(parts, ", ")), " "))
	}
	// Writes made between the readings of the writers and of the
	// streams, or by a process the bench does not read.
	fmt.Fprintf(out, "    %-30s %.2f\n", "counted by no writer read", roundedZero(r.Uncounted))
}

func report(out io.Writer, r *bench.Result) {
	fmt.Fprintf(out, "\n%s\n", r.Scenario)
	fmt.Fprintf(out, "  all %d pods Running after   %s\n", r.Pods, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "  throughput                  %.0f pods/s\n", r.PodsPerSec)
	fmt.Fprintf(out, "  pod created -> Running      p50 %s   p99 %s\n", r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond))
	st := r.Stages
	fmt.Fprintf(out, "    created -> bound          p50 %s   p99 %s\n", st.BindP50.Round(time.Millisecond), st.BindP99.Round(time.Millisecond))
	fmt.Fprintf(out, "    bound -> Running          p50 %s   p99 %s\n", st.StartP50.Round(time.Millisecond), st.StartP99.Round(time.Millisecond))
	fmt.Fprintf(out, "  bench's watch lag           p50 %s   p99 %s (write stored -> seen)\n", st.WatchLagP50.Round(100*time.Microsecond), st.WatchLagP99.Round(100*time.Microsecond))
	fmt.Fprintf(out, "  last Deployment made after  %s\n", st.Submitted.Round(time.Millisecond))
	fmt.Fprintf(out, "  first pod created after      %s\n", st.FirstCreated.Round(time.Millisecond))
	fmt.Fprintf(out, "  last pod created, bound, Running after %s, %s, %s\n", st.LastCreated.Round(time.Millisecond), st.LastBound.Round(time.Millisecond), st.LastRunning.Round(time.Millisecond))
	fmt.Fprintf(out, "  store ceiling               %.0f writes/s (async, revision-checked) = %.0f pods/s at 3 writes a pod\n", r.CeilingWrites, r.CeilingPods)
	fmt.Fprintf(out, "  throughput / ceiling        %.1f%%\n", 100*r.Ratio)
	fmt.Fprintf(out, "  store writes per pod        %.2f, at %.1f%% of the ceiling's rate\n", r.TotalWritesPerPod, 100*r.WriteShare)
	for _, s := range byValue(r.WritesPerPod) {
		fmt.Fprintf(out, "    %-30s %.2f\n", s, r.WritesPerPod[s])
	}
	reportWriters(out, r)
	if a := r.API; a != nil {
		fmt.Fprintf(out, "  API: list of %d pods          %s (median of %d; the first %s), %.1f MB of JSON read to the last byte\n", a.ListPods,
			a.List.Round(time.Microsecond*100), a.ListRuns, a.ListFirst.Round(time.Microsecond*100), float64(a.ListBytes)/1e6)
		fmt.Fprintf(out, "  API: creates from %d clients  %.0f/s achieved, p50 %s   p99 %s, %d failed (their connections opened before, in %s)\n", a.CreateClients, a.CreateRate,
			a.CreateP50.Round(10*time.Microsecond), a.CreateP99.Round(10*time.Microsecond), a.CreateErrors, a.CreateConnect.Round(100*time.Microsecond))
		fmt.Fprintf(out, "  API: watch delivery           %d writes to %d watchers: p50 %s   p99 %s after the write's answer, %d missed\n", a.WatchEvents, a.Watchers,
			a.WatchP50.Round(10*time.Microsecond), a.WatchP99.Round(10*time.Microsecond), a.WatchMissed)
	}
	for _, w := range r.Work {
		fmt.Fprintf(out, "  work of %-32s CPU %5.1f s (%3.0f%% of a core)", w.Name, w.CPU.Seconds(), 100*w.CPU.Seconds()/r.Elapsed.Seconds())
		if w.Reconciles >= 0 {
			fmt.Fprintf(out, ", %.0f reconciles (%.0f/s)", w.Reconciles, w.Reconciles/r.Elapsed.Seconds())
		}
		fmt.Fprintln(out)
	}
	if r.MachineBusy > 0 {
		fmt.Fprintf(out, "  the machine's cores busy     %.0f%% of the time\n", 100*r.MachineBusy)
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
