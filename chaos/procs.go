package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// proc is a child process the harness can start, kill -9, pause and
// restart. Its output goes to a log file in the run's directory.
type proc struct {
	name string
	bin  string
	args []string
	env  []string
	dir  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
	runs int
}

func newProc(dir, name, bin string, args ...string) *proc {
	return &proc{name: name, bin: bin, args: args, dir: dir}
}

// start runs the process (again, after a kill).
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running", p.name)
	}
	if p.log == nil {
		f, err := os.Create(filepath.Join(p.dir, p.name+".log"))
		if err != nil {
			return err
		}
		p.log = f
	}
	p.runs++
	fmt.Fprintf(p.log, "==== start %d at %s: %s %v\n", p.runs, time.Now().Format(time.RFC3339Nano), p.bin, p.args)
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// Its own process group, so that its children (pods) are not ours to
	// signal by accident, and it survives our Ctrl-C to be cleaned up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.signalAndWait(syscall.SIGKILL, 0)
}

// stop sends SIGTERM, and SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	p.signalAndWait(syscall.SIGTERM, grace)
}

func (p *proc) signalAndWait(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused process cannot die gracefully
	_ = cmd.Process.Signal(sig)
	if grace > 0 {
		select {
		case <-done:
			return
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	<-done
}

// pause and resume freeze and thaw the process (SIGSTOP, SIGCONT).
func (p *proc) pause()  { p.signal(syscall.SIGSTOP) }
func (p *proc) resume() { p.signal(syscall.SIGCONT) }

func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// pid is the running process's id, 0 when it is not running.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// close stops the process for good and closes its log.
func (p *proc) close() {
	p.stop(10 * time.Second)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.log != nil {
		_ = p.log.Close()
		p.log = nil
	}
}

// build compiles a main package into dir and returns the binary's path.
// The Go build cache makes a second build of unchanged code quick.
func build(ctx context.Context, dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// Binaries are the programs a run starts.
type Binaries struct {
	Homeostat, NATS string
}

// Build compiles the homeostat and nats-server binaries into dir.
func Build(ctx context.Context, dir string) (Binaries, error) {
	var b Binaries
	var err error
	if b.Homeostat, err = build(ctx, dir, "homeostat", "github.com/homeostat/homeostat/cmd/homeostat"); err != nil {
		return b, err
	}
	b.NATS, err = build(ctx, dir, "nats-server", "github.com/nats-io/nats-server/v2")
	return b, err
}
