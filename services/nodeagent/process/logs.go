package process

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Container output goes to a file held open by the container's log shim
// (logshim.go), or by the process itself without one, so that it keeps
// logging while the agent restarts. The file is bounded by copying
// its tail aside and truncating it in place, as logrotate's copytruncate
// does; the writer's append mode carries on at the new end. A container's
// previous instance keeps its log as previous.log.

func (r *Runtime) logDir(podUID, container string) string {
	return filepath.Join(r.cfg.Dir, "pods", podUID, container)
}

func (r *Runtime) openLog(podUID, container string, restarted bool) (*os.File, error) {
	dir := r.logDir(podUID, container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cur := filepath.Join(dir, "current.log")
	if restarted {
		_ = os.Rename(cur, filepath.Join(dir, "previous.log"))
	}
	return os.OpenFile(cur, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// bound keeps a log file under max bytes, keeping the newest half.
func bound(path string, max int64) {
	st, err := os.Stat(path)
	if err != nil || st.Size() <= max {
		return
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	keep := max / 2
	if _, err := f.Seek(st.Size()-keep, io.SeekStart); err != nil {
		return
	}
	tail := make([]byte, keep)
	n, _ := io.ReadFull(f, tail)
	if err := f.Truncate(0); err != nil {
		return
	}
	_, _ = f.WriteAt(tail[:n], 0)
}

// LogPath is the log of a container (of its previous instance with previous).
func (r *Runtime) LogPath(podUID, container string, previous bool) (string, error) {
	name := "current.log"
	if previous {
		name = "previous.log"
	}
	p := filepath.Join(r.logDir(podUID, container), name)
	if _, err := os.Stat(p); err != nil {
		if previous {
			return "", errNoPrevious(container)
		}
		return "", err
	}
	return p, nil
}

type errNoPrevious string

func (e errNoPrevious) Error() string {
	return "container " + string(e) + " has not been restarted: there is no previous log"
}

// logWriter is where a container writes its output: a pipe into a log
// shim started to append to logf, or logf itself without a shim.
func (r *Runtime) logWriter(logf *os.File) (*os.File, error) {
	if len(r.cfg.LogShim) == 0 {
		return logf, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	shim := exec.Command(r.cfg.LogShim[0], r.cfg.LogShim[1:]...)
	shim.Stdin, shim.Stdout, shim.Stderr = pr, logf, logf
	// Its own group, and none of the markers of a container's process, so
	// that neither a container's stop nor adoption mistakes it for one.
	shim.Env = []string{"PATH=/usr/bin:/bin"}
	shim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := shim.Start(); err != nil {
		pw.Close()
		return nil, fmt.Errorf("starting the log shim: %w", err)
	}
	go func() { _ = shim.Wait() }()
	return pw, nil
}
