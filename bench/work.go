package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Work is what one component did over a scenario: the CPU it used and,
// for a controller process, the reconciles it ran.
type Work struct {
	Name string
	CPU  time.Duration
	// Reconciles is -1 where the component does not count them.
	Reconciles float64
}

// work reads each component's CPU time and reconcile count now, and the
// bench's own process's, which holds the embedded store.
func (cs components) work(ctx context.Context) []Work {
	out := make([]Work, 0, len(cs)+1)
	for _, c := range cs {
		w := Work{Name: c.name, CPU: cpuTime(c.cmd.Process.Pid), Reconciles: -1}
		if c.metricsAddr != "" {
			w.Reconciles = reconciles(ctx, c.metricsAddr)
		}
		out = append(out, w)
	}
	return append(out, Work{Name: selfName, CPU: cpuTime(os.Getpid()), Reconciles: -1})
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

// reconciles sums a controller process's reconciles, every controller and
// outcome, from its metrics, served at the address written in addrFile;
// -1 when they cannot be read.
func reconciles(ctx context.Context, addrFile string) float64 {
	addr, err := os.ReadFile(addrFile)
	if err != nil {
		return -1
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+string(addr)+"/metrics", nil)
	if err != nil {
		return -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	return sumMetric(bufio.NewScanner(resp.Body), "homeostat_reconcile_duration_seconds_count")
}

// sumMetric adds up every sample of one metric in the text exposition
// format; -1 when there is none.
func sumMetric(sc *bufio.Scanner, name string) float64 {
	total, found := 0.0, false
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			total, found = total+v, true
		}
	}
	if !found {
		return -1
	}
	return total
}
