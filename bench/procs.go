package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/homeostat/homeostat/bus"
)

type component struct {
	name string
	cmd  *exec.Cmd
	peak atomic.Int64
	done chan struct{}
	// exited closes when the process has ended (and been waited for).
	exited chan struct{}
	// metrics opens the component's metrics, or is nil.
	metrics func(context.Context) (io.ReadCloser, error)
}

type components []*component

// startComponents runs each service as its own process against natsURL:
// cfg.Controllers controller processes, cfg.Schedulers schedulers (one
// leads, the others stand by) and the simulated nodes.
func startComponents(cfg Config, natsURL, dir string) (components, error) {
	type spec struct {
		name, addrFile string
		args           []string
	}
	var specs []spec
	numbered := func(role string, i, n int) string {
		if n <= 1 {
			return role
		}
		return fmt.Sprintf("%s-%d", role, i+1)
	}
	// Each serves its metrics (its writes to the bus, a controller's
	// reconciles) and says where once it does.
	serve := func(name string, args ...string) spec {
		file := filepath.Join(dir, strings.Fields(name)[0]+".metrics-address")
		return spec{name, file, append(args, "--nats", natsURL, "--metrics-listen", "127.0.0.1:0", "--metrics-address-file", file)}
	}
	for i := range max(cfg.Controllers, 1) {
		specs = append(specs, serve(numbered("controllers", i, cfg.Controllers),
			"controllers", "--workers", "8", "--reconcile-history="+strconv.FormatBool(!cfg.NoHistory)))
	}
	for i := range max(cfg.Schedulers, 1) {
		specs = append(specs, serve(numbered("scheduler", i, cfg.Schedulers), "scheduler"))
	}
	specs = append(specs, serve(fmt.Sprintf("nodeagent --simulate %d", cfg.Nodes),
		"nodeagent", "--simulate", strconv.Itoa(cfg.Nodes), "--name", "sim"))
	var cs components
	for _, s := range specs {
		c, err := startComponent(cfg, dir, s.name, s.args)
		if err != nil {
			cs.stop()
			return nil, err
		}
		c.metrics = metricsAt(s.addrFile)
		cs = append(cs, c)
	}
	return cs, nil
}

// storeName names the store's process in the bench's report.
const storeName = "nats"

// startStore runs the store, a NATS server with JetStream, in a process
// of its own, as it runs beside the components it serves, and connects
// the bench to it. In the bench's process, the store was paused by the
// bench's collections (its watch of every pod, the probes' clients), and
// its memory and CPU were counted with theirs.
func startStore(ctx context.Context, cfg Config, dir string) (*component, *bus.Conn, string, error) {
	addr := filepath.Join(dir, "nats.address")
	c, err := startComponent(cfg, dir, storeName, []string{"nats-store", "--data-dir", filepath.Join(dir, "store"), "--address-file", addr})
	if err != nil {
		return nil, nil, "", err
	}
	awaitFile(addr, c.exited, time.Now().Add(time.Minute))
	url, err := os.ReadFile(addr)
	if err != nil {
		components{c}.stop()
		if ctx.Err() != nil {
			return nil, nil, "", ctx.Err()
		}
		return nil, nil, "", fmt.Errorf("bench: the store did not start serving (see %s): %w", filepath.Join(dir, "nats.log"), err)
	}
	conn, err := bus.Connect(ctx, bus.Config{URLs: string(url), Name: "bench"})
	if err != nil {
		components{c}.stop()
		return nil, nil, "", err
	}
	return c, conn, string(url), nil
}

// startComponent runs the binary with args as the component name, its
// output in <dir>/<first word of name>.log, and samples its peak memory.
func startComponent(cfg Config, dir, name string, args []string) (*component, error) {
	logf, err := os.Create(filepath.Join(dir, strings.Fields(name)[0]+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Exe, append(args, "--log-level", "warn")...)
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	if cfg.CPUProfile != "" {
		// Profiled from SIGUSR1 to SIGUSR2: the scenario alone.
		cmd.Env = append(cmd.Env, "HOMEOSTAT_CPUPROFILE="+cfg.CPUProfile, "HOMEOSTAT_CPUPROFILE_WINDOW=1")
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("bench: start %s: %w", name, err)
	}
	// The child holds the file now.
	logf.Close()
	c := &component{name: name, cmd: cmd, done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	go func() {
		for {
			select {
			case <-c.done:
				return
			case <-time.After(200 * time.Millisecond):
				if v := peakRSS(cmd.Process.Pid); v > c.peak.Load() {
					c.peak.Store(v)
				}
			}
		}
	}()
	return c, nil
}

func (cs components) peaks() map[string]int64 {
	out := map[string]int64{}
	for _, c := range cs {
		out[c.name] = max(c.peak.Load(), peakRSS(c.cmd.Process.Pid))
	}
	return out
}

// signal sends each component sig.
func (cs components) signal(sig os.Signal) {
	for _, c := range cs {
		_ = c.cmd.Process.Signal(sig)
	}
}

// awaitHeaps waits, up to wait, until each component still running has
// written its heap profile in dir (as <role>-<pid>.heap, once whole),
// so that none is stopped, and lets go of what it holds, while it writes.
// A heap written as its process stops reflects its teardown: one of
// 100,000 simulated pods showed 12 MB live instead of 400.
func (cs components) awaitHeaps(dir string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for _, c := range cs {
		path := filepath.Join(dir, fmt.Sprintf("%s-%d.heap", filepath.Base(c.cmd.Args[1]), c.cmd.Process.Pid))
		awaitFile(path, c.done, deadline)
	}
}

// awaitFile waits until path exists, done closes or deadline passes.
func awaitFile(path string, done <-chan struct{}, deadline time.Time) {
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-done:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (cs components) stop() {
	for _, c := range cs {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
	}
	for _, c := range cs {
		select {
		case <-c.exited:
		case <-time.After(20 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
		close(c.done)
	}
}

// resetPeak hands what this process freed back to the system and starts
// its peak resident memory (VmHWM) again from its present size, by
// writing 5 to Linux's /proc/self/clear_refs; where that cannot be
// written, the peak stays the process's since it began.
func resetPeak() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS reads VmHWM, the peak resident set, of a process.
func peakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
