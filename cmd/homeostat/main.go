// Command homeostat is the one Homeostat binary: the server roles (up, api,
// …) and the client verbs (apply, get, describe, delete, …).
package main

import (
	"context"
	"encoding/json"
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
	err := root.ExecuteContext(ctx)
	if err != nil {
		printError(err)
		os.Exit(1)
	}
}

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

func statusFromBody(code int, data []byte) error {
	var st object.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		return fmt.Errorf("HTTP %d: %s", code, data)
	}
	return &st
}
