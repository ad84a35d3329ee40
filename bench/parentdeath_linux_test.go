package bench

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// parentEnv, when set, makes TestParentDeathHelper the bench's stand-in:
// it starts a component in that directory and waits to be killed.
const parentEnv = "BENCH_PARENT_DIR"

// TestParentDeathHelper is the parent process of TestComponentDiesWithBench.
func TestParentDeathHelper(t *testing.T) {
	dir := os.Getenv(parentEnv)
	if dir == "" {
		return // run by the test below, in a process of its own
	}
	// The component: a shell that becomes a sleep (the bench's flags it
	// appends are the shell's positional parameters).
	c, err := startComponent(Config{Exe: "/bin/sh"}, dir, "sleeper", []string{"-c", "exec sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(c.cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	select {} // until killed
}

// TestComponentDiesWithBench: a bench killed outright (SIGKILL, so that
// it stops nothing itself) leaves none of its components running.
func TestComponentDiesWithBench(t *testing.T) {
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^TestParentDeathHelper$", "-test.timeout=5m")
	parent.Env = append(os.Environ(), parentEnv+"="+dir)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	parentDone := make(chan struct{})
	go func() { defer close(parentDone); _ = parent.Wait() }()
	defer func() { _ = parent.Process.Kill(); <-parentDone }()
	var pid int
	poll.Until(t, "the component started", 30*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(string(b))
		return err == nil && pid > 0
	})
	defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }() // should the test fail
	if !running(pid) {
		t.Fatal("the component was not running while the bench was")
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-parentDone
	poll.Until(t, "the component ended with the bench", 30*time.Second, func() bool { return !running(pid) })
}

// running says whether pid is a live process: neither gone nor a zombie
// (which the init of a container may never reap).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
