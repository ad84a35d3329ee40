package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/services/nodeagent/process"
)

// newLogShim is the log shim a node agent puts between a container and
// its log: it stamps each line of its input with the time.
func newLogShim() *cobra.Command {
	return &cobra.Command{
		Use:    "logshim",
		Short:  "Copy standard input to standard output, each line with the time it came (run by the node agent)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return process.RunLogShim(os.Stdin, os.Stdout)
		},
	}
}
