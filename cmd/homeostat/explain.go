package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

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
			ctx := cmd.Context()
			kind, names := splitKindName(args)
			if len(names) != 1 {
				return fmt.Errorf("explain needs one object: explain KIND/NAME")
			}
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output must be json or yaml, not %q", output)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			res, err := resolveKind(ctx, c, kind)
			if err != nil {
				return err
			}
			ns := ""
			if res.Namespaced {
				ns = g.namespace
			}
			var e explain.Explanation
			if err := c.Do(ctx, http.MethodGet, res.Path(ns, names[0])+"/explain", nil, "", &e); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(e)
			case "yaml":
				b, err := yaml.Marshal(e)
				if err != nil {
					return err
				}
				_, err = out.Write(b)
				return err
			}
			return explain.Text(out, &e, time.Now())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (an Explanation)")
	return cmd
}
