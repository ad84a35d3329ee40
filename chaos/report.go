package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Report is what a run found.
type Report struct {
	Topology  string
	FaultTime time.Duration
	Faults    map[string]int
	// Operations by kind and outcome; Lists and WatchEvents checked.
	Operations  map[string]int
	Lists       int
	WatchEvents int
	Resumes     int
	Relists     int
	// What went wrong; all must be empty.
	NotLinearizable []string
	Undecided       bool
	ListViolations  []string
	WatchViolations []string
	Lost            []string
	ServerErrors    []string
	FuzzFailures    []string
	OverSurge       []string
	DuplicateSlots  []string
	Stuck           []string
	// Figures.
	Latency               map[string]latency
	MaxLivePods, PodBound int
	Rolls                 int
	Converge              time.Duration
	BadValues             []string
	Fuzzed                int
	ActAfterNodeLoss      []actTime
}

// actTime is how long after a NATS node was killed a rescale of a
// Deployment was acknowledged, the controllers acted on it (the first pod
// added or taken away), and its pods matched it.
type actTime struct {
	Acked, Acted, Done time.Duration
}

func (a actTime) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return fmt.Sprintf("acknowledged %s, acted %s, pods matched %s", r(a.Acked), r(a.Acted), r(a.Done))
}

// collect runs the checks: final is the state read right after the load,
// settled the state the watchers were last compared with.
func (r *Report) collect(h *history, load *kvLoad, web *rollout, watches []*watchLog, final, settled map[string]item, dir string) {
	h.mu.Lock()
	history := h.ops
	lists := h.lists
	h.mu.Unlock()
	r.NotLinearizable, r.Undecided = checkLinearizable(history, 2*time.Minute, dir)
	r.ListViolations = checkLists(history, lists)
	r.WatchViolations = checkWatches(history, watches, settled)
	r.Lost = lostWrites(history, final)
	if len(r.ListViolations)+len(r.WatchViolations)+len(r.Lost) > 0 && dir != "" {
		writeEvidence(dir, history, watches)
	}
	r.Lists = len(lists)
	for _, w := range watches {
		w.mu.Lock()
		for _, s := range w.segments {
			r.WatchEvents += len(s)
		}
		r.Resumes += w.resumes
		r.Relists += w.relists
		w.mu.Unlock()
	}
	load.mu.Lock()
	r.Operations = load.counts
	r.ServerErrors = load.failures
	r.Latency = map[string]latency{}
	for k, ds := range load.latencies {
		r.Latency[k] = latencyOf(ds)
	}
	load.mu.Unlock()
	web.mu.Lock()
	r.OverSurge, r.DuplicateSlots = web.over, web.dupes
	r.MaxLivePods, r.PodBound, r.Rolls = web.maxLive, web.replicas+web.surge, web.rolls
	if len(web.over)+len(web.dupes) > 0 && dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "pods-"+web.name+".txt"), []byte(strings.Join(web.events, "\n")+"\n"), 0o644)
	}
	web.mu.Unlock()
}

// Failed reports whether the run found anything wrong.
func (r *Report) Failed() bool {
	return len(r.NotLinearizable)+len(r.ListViolations)+len(r.WatchViolations)+len(r.Lost)+
		len(r.ServerErrors)+len(r.FuzzFailures)+len(r.OverSurge)+len(r.DuplicateSlots)+len(r.Stuck) > 0
}

// Total is the number of operations the clients made.
func (r *Report) Total() int {
	n := 0
	for _, c := range r.Operations {
		n += c
	}
	return n
}

// String is the report as a reader wants it: figures, then each problem.
func (r *Report) String() string {
	var b []byte
	p := func(format string, args ...any) { b = fmt.Appendf(b, format+"\n", args...) }
	p("topology %s, faults for %s", r.Topology, r.FaultTime)
	var fs []string
	for f, n := range r.Faults {
		fs = append(fs, fmt.Sprintf("%s ×%d", f, n))
	}
	sort.Strings(fs)
	p("  faults:                 %v", fs)
	p("  operations:             %d (%d lists checked, %d watch events, %d resumes, %d re-lists)", r.Total(), r.Lists, r.WatchEvents, r.Resumes, r.Relists)
	var ks []string
	for k := range r.Latency {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		p("  %-6s latency:         %s", k, r.Latency[k])
	}
	p("  linearizability:        %d keys violated%s", len(r.NotLinearizable), map[bool]string{true: " (some undecided in time)"}[r.Undecided])
	p("  list violations:        %d", len(r.ListViolations))
	p("  watch violations:       %d", len(r.WatchViolations))
	p("  acknowledged writes lost: %d", len(r.Lost))
	p("  server errors (5xx but 503): %d", len(r.ServerErrors))
	p("  duplicate pod slots:    %d", len(r.DuplicateSlots))
	p("  live pods, peak:        %d (bound %d, %d rollouts)", r.MaxLivePods, r.PodBound, r.Rolls)
	p("  converged after the last fault: %s (a rollout of %d pods started right after it)", r.Converge.Round(100*time.Millisecond), r.PodBound-1)
	p("  bad values injected:    %d", len(r.BadValues))
	p("  fuzzed bodies posted:   %d (%d answered 5xx or stored unreadable)", r.Fuzzed, len(r.FuzzFailures))
	if len(r.ActAfterNodeLoss) > 0 {
		for _, a := range r.ActAfterNodeLoss {
			p("  after a NATS node loss: %s", a)
		}
	}
	for _, group := range []struct {
		name string
		list []string
	}{{"not linearizable", r.NotLinearizable}, {"list", r.ListViolations}, {"watch", r.WatchViolations},
		{"lost", r.Lost}, {"server error", r.ServerErrors}, {"fuzz", r.FuzzFailures}, {"over surge", r.OverSurge},
		{"duplicate slot", r.DuplicateSlots}, {"stuck", r.Stuck}} {
		for i, s := range group.list {
			if i == 10 {
				p("  %s: … %d more", group.name, len(group.list)-10)
				break
			}
			p("  %s: %s", group.name, s)
		}
	}
	return string(b)
}

// latency summarises how long requests of one kind took.
type latency struct {
	N             int
	P50, P99, Max time.Duration
}

func latencyOf(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return latency{N: len(s), P50: s[len(s)/2], P99: s[len(s)*99/100], Max: s[len(s)-1]}
}

func (l latency) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("p50 %s, p99 %s, max %s (%d)", r(l.P50), r(l.P99), r(l.Max), l.N)
}

// writeEvidence writes, for a reader of a failed check, every key's history
// and what each watcher saw and went through.
func writeEvidence(dir string, history []porcupine.Operation, watches []*watchLog) {
	for _, part := range partitionByKey(history) {
		key := part[0].Input.(kvInput).Key
		_ = os.WriteFile(filepath.Join(dir, "history-"+key+".txt"), []byte(describeHistory(part)), 0o644)
	}
	for i, w := range watches {
		w.mu.Lock()
		var b strings.Builder
		for si, seg := range w.segments {
			fmt.Fprintf(&b, "segment %d\n", si)
			for _, ev := range seg {
				fmt.Fprintf(&b, "  %s %s %s@%d\n", ev.Type, ev.Key, ev.Value, ev.Rev)
			}
		}
		b.WriteString("notes\n" + strings.Join(w.notes, "\n") + "\n")
		w.mu.Unlock()
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("watch-%d.txt", i)), []byte(b.String()), 0o644)
	}
}
