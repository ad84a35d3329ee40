package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/explain"
)

func newExplain(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "explain KIND/NAME",
		Short: "Say why an object is or is not converged, and what would fix it",
		Long: "Walks down what the object owns (a Deployment's ReplicaSets, their pods, the pods' nodes),\n" +
			"groups identical causes, ranks the deepest first, shows where each loop stands with the\n" +
			"objects on the way (queued, in flight, backing off, idle) and the object's latest\n" +
			"reconciles, and closes with the most likely root cause and its fix. A healthy object\n" +
			"answers in one line. (Unlike kubectl explain, which documents a kind's fields.)",
		Example: "  homeostat explain deployment/web\n  homeostat explain pod web-7d9f-0 -o yaml",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			var e explain.Explanation
			if err := getSubresource(cmd.Context(), g, args, "explain", &e); err != nil {
				return err
			}
			if output != "" {
				return printStructured(cmd.OutOrStdout(), e, output)
			}
			return explain.Text(cmd.OutOrStdout(), &e, time.Now())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (an Explanation)")
	return cmd
}
