// Command homeostat is the one Homeostat binary: the server roles (up, api,
// …) and the client verbs (apply, get, describe, delete, …).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/homeostat/homeostat/object"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	stopProfile := startProfiler(ctx)
	defer stopProfile()
	err := root.ExecuteContext(ctx)
	var quiet exitStatus
	if errors.As(err, &quiet) {
		stopProfile()
		os.Exit(int(quiet))
	}
	if err != nil {
		printError(err)
		stopProfile()
		os.Exit(1)
	}
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
