// Command homeostat is the one Homeostat binary: the server roles (up, api,
// …) and the client verbs (apply, get, describe, delete, …).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/homeostat/homeostat/object"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	// HOMEOSTAT_CPUPROFILE=DIR writes a CPU profile per process, for finding
	// the bottleneck of a benchmark's components, and a heap profile when
	// told to stop, before the process lets go of what it holds.
	if dir := os.Getenv("HOMEOSTAT_CPUPROFILE"); dir != "" {
		base := filepath.Join(dir, fmt.Sprintf("%s-%d", filepath.Base(strings.Join(os.Args[1:2], "")), os.Getpid()))
		if f, err := os.Create(base + ".prof"); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
		heap := make(chan struct{})
		go func() { defer close(heap); <-ctx.Done(); writeHeapProfile(base + ".heap") }()
		defer func() {
			if ctx.Err() != nil {
				<-heap
			}
		}()
	}
	err := root.ExecuteContext(ctx)
	var quiet exitStatus
	if errors.As(err, &quiet) {
		pprof.StopCPUProfile()
		os.Exit(int(quiet))
	}
	if err != nil {
		printError(err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// writeHeapProfile writes the live heap to path, after a collection.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	runtime.GC()
	_ = pprof.WriteHeapProfile(f)
}

// exitStatus ends the command with that status and nothing printed: an
// answer told by the status alone, as `auth can-i` answers no.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// printError shows a server Status the way a user needs it: the reason,
// the object, and each failing field with its rule.
func printError(err error) {
	var st *object.Status
	if errors.As(err, &st) {
		reason := st.Reason
		if reason == "" {
			reason = fmt.Sprint(st.Code)
		}
		fmt.Fprintf(os.Stderr, "Error from server (%s): %s\n", reason, st.Error())
		return
	}
	fmt.Fprintf(os.Stderr, "Error: %v\n", err)
}
