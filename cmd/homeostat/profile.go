package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
)

// profiler writes the CPU and heap profiles HOMEOSTAT_CPUPROFILE=DIR asks
// for, to find the bottleneck of a benchmark's components: a CPU profile
// of the process's life, or, with HOMEOSTAT_CPUPROFILE_WINDOW set, of the
// time between SIGUSR1 and SIGUSR2 (a benchmark's scenario, without the
// start of a thousand nodes); and the live heap at SIGUSR2 (the scenario's
// end, every pod running), or, without one, when told to stop. (Written
// at the stop, it raced the process letting go of what it holds: a host
// of simulated nodes had stopped most of its pods by then.)
type profiler struct {
	base string
	mu   sync.Mutex
	file *os.File
}

// startProfiler starts what the environment asks for; stop ends it. Its
// signal handling is main's: only main calls it.
func startProfiler(ctx context.Context) (stop func()) {
	dir := os.Getenv("HOMEOSTAT_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	p := &profiler{base: filepath.Join(dir, fmt.Sprintf("%s-%d", filepath.Base(strings.Join(os.Args[1:2], "")), os.Getpid()))}
	window := make(chan os.Signal, 2)
	if os.Getenv("HOMEOSTAT_CPUPROFILE_WINDOW") != "" {
		signal.Notify(window, syscall.SIGUSR1, syscall.SIGUSR2)
	} else {
		p.start()
	}
	heap := make(chan struct{})
	go func() {
		defer close(heap)
		wrote := false
		for {
			select {
			case <-ctx.Done():
				if !wrote {
					writeHeapProfile(p.base + ".heap")
				}
				return
			case sig := <-window:
				if sig == syscall.SIGUSR1 {
					p.start()
					continue
				}
				p.stop()
				writeHeapProfile(p.base + ".heap")
				wrote = true
			}
		}
	}()
	return func() {
		signal.Stop(window)
		p.stop()
		if ctx.Err() != nil {
			<-heap
		}
	}
}

func (p *profiler) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file != nil {
		return
	}
	f, err := os.Create(p.base + ".prof")
	if err != nil {
		return
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return
	}
	p.file = f
}

func (p *profiler) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file == nil {
		return
	}
	pprof.StopCPUProfile()
	p.file.Close()
	p.file = nil
}

// writeHeapProfile writes the live heap to path, after a collection. The
// file appears whole or not at all (written aside, then renamed), so
// that a reader waiting for it (the bench) never reads half of one.
func writeHeapProfile(path string) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return
	}
	runtime.GC()
	err = pprof.WriteHeapProfile(f)
	if cerr := f.Close(); err == nil && cerr == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
}
