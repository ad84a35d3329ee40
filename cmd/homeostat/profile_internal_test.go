package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// A component profiled over a window (a benchmark's scenario) writes its
// heap as the window closes, while it still holds what the scenario made,
// not only when it is told to stop.
func TestHeapWrittenAsTheWindowCloses(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOMEOSTAT_CPUPROFILE", dir)
	t.Setenv("HOMEOSTAT_CPUPROFILE_WINDOW", "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := startProfiler(ctx)
	defer stop()
	files := func(pattern string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		return m
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the CPU profile started by SIGUSR1", 10*time.Second, func() bool { return len(files("*.prof")) == 1 })
	if heaps := files("*.heap"); len(heaps) != 0 {
		t.Fatalf("a heap profile %v before the window closed", heaps)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the heap written as the window closed, the process still running", 10*time.Second, func() bool {
		heaps := files("*.heap")
		if len(heaps) != 1 {
			return false
		}
		st, err := os.Stat(heaps[0])
		return err == nil && st.Size() > 0
	})
}
