package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Work is what one component did over a scenario: the CPU it used, the
// messages it stored in the bus and, for a controller process, the
// reconciles it ran.
type Work struct {
	Name string
	CPU  time.Duration
	// Reconciles is -1 where the component does not count them.
	Reconciles float64
	// Writes are the messages the component stored, by stream as
	// bus.Conn.Writes names them; nil where its metrics cannot be read.
	Writes map[string]float64
}

// work reads each component's CPU time, writes and reconcile count now,
// and the bench's own process's (its watch of every pod, its clients). The
// components are read at once, so that their counts tell nearly the same
// moment.
func (cs components) work(ctx context.Context) []Work {
	out := make([]Work, len(cs)+1)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			w := Work{Name: c.name, CPU: cpuTime(c.cmd.Process.Pid), Reconciles: -1}
			if c.metrics != nil {
				if fams, err := scrape(ctx, c.metrics); err == nil {
					w.Reconciles, w.Writes = fromMetrics(fams)
				}
			}
			out[i] = w
		})
	}
	self := Work{Name: selfName, CPU: cpuTime(os.Getpid()), Reconciles: -1}
	if fams, err := prometheus.DefaultGatherer.Gather(); err == nil {
		_, self.Writes = fromMetrics(fams)
	}
	out[len(cs)] = self
	wg.Wait()
	return out
}

// podsStream is the label Conn.Writes gives the pods' stream.
const podsStream = "pods"

// countWait bounds how long the bench waits for the components to count
// pod writes the store has taken: a write whose answer was lost is never
// counted.
const countWait = 5 * time.Second

// workSettled reads the components' work and the streams' counts once
// every pod write the store took has been counted by its writer, and
// says how many were still not (0 unless wait ran out). A writer
// counts a write when it reads the store's answer, which may come after
// the bench saw the last pod Running; read at once, the last writes would
// show as made by no writer. The streams are read after the work, so
// that the writes counted are never more than those stored.
func workSettled(ctx context.Context, cs components, counts writeCounter, workBefore []Work, before map[string]uint64, wait time.Duration) ([]Work, map[string]uint64, float64, error) {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		work := since(workBefore, cs.work(ctx))
		after, err := counts.Writes(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		short := podWritesUncounted(work, before, after)
		if short <= 0 || time.Now().After(deadline) {
			return work, after, max(short, 0), nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, 0, ctx.Err()
		case <-tick.C:
		}
	}
}

// writeCounter is the store's count of the messages each stream took.
type writeCounter interface {
	Writes(ctx context.Context) (map[string]uint64, error)
}

// podWritesUncounted is how many of the writes the pods' stream took
// between before and after the writers between them did not count (less
// than 0 when they counted more, made after the stream was read). A
// component whose metrics could not be read counts nothing, and the bench
// waits out countWait.
func podWritesUncounted(work []Work, before, after map[string]uint64) float64 {
	var counted float64
	for _, w := range work {
		counted += w.Writes[podsStream]
	}
	return float64(after[podsStream]-before[podsStream]) - counted
}

// since is the work done between two readings of the same components.
func since(before, after []Work) []Work {
	out := make([]Work, len(after))
	for i, a := range after {
		out[i] = a
		if i < len(before) && before[i].Name == a.Name {
			out[i].CPU -= before[i].CPU
			if a.Reconciles >= 0 && before[i].Reconciles >= 0 {
				out[i].Reconciles -= before[i].Reconciles
			}
			out[i].Writes = nil
			if a.Writes != nil && before[i].Writes != nil {
				out[i].Writes = map[string]float64{}
				for stream, n := range a.Writes {
					if d := n - before[i].Writes[stream]; d > 0 {
						out[i].Writes[stream] = d
					}
				}
			}
		}
	}
	return out
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// machineCPU is the CPU time the machine's cores have spent busy and in
// all since boot, from /proc/stat's first line (0, 0 where there is none).
func machineCPU() (busy, total time.Duration) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "cpu ") {
		return 0, 0
	}
	return parseCPULine(line)
}

// parseCPULine reads /proc/stat's "cpu" line: user, nice, system, idle,
// iowait, irq, softirq, steal in USER_HZ ticks (guest time is already
// in user). Idle and iowait are not busy.
func parseCPULine(line string) (busy, total time.Duration) {
	fields := strings.Fields(line)[1:]
	for i, f := range fields[:min(len(fields), 8)] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, 0
		}
		d := time.Duration(n) * time.Second / clockTicks
		total += d
		if i != 3 && i != 4 {
			busy += d
		}
	}
	return busy, total
}

// cpuTime is a process's user and system CPU time so far.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// Metric names the bench reads.
const (
	reconcilesMetric = "homeostat_reconcile_duration_seconds"
	writesMetric     = "homeostat_bus_writes_total"
)

// scrape reads a component's metrics in the text exposition format.
func scrape(ctx context.Context, open func(context.Context) (io.ReadCloser, error)) ([]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body, err := open(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(body)
	if err != nil {
		return nil, err
	}
	fams := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		fams = append(fams, f)
	}
	return fams, nil
}

// fromMetrics reads a process's reconciles, every controller and outcome
// (-1 when it counts none), and its writes to the bus by stream.
func fromMetrics(fams []*dto.MetricFamily) (reconciles float64, writes map[string]float64) {
	reconciles, writes = -1, map[string]float64{}
	for _, f := range fams {
		switch f.GetName() {
		case reconcilesMetric:
			for _, m := range f.GetMetric() {
				reconciles = max(reconciles, 0) + float64(m.GetHistogram().GetSampleCount())
			}
		case writesMetric:
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "stream" {
						writes[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return reconciles, writes
}

// metricsAt opens the /metrics of a component that writes where it
// serves them to addrFile once it does.
func metricsAt(addrFile string) func(context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		addr, err := os.ReadFile(addrFile)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+string(addr)+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("bench: %s answered %s", req.URL, resp.Status)
		}
		return resp.Body, nil
	}
}
