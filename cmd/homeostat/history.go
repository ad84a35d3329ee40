package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/services/api"
)

func newHistory(g *globals) *cobra.Command {
	var since, controller, output string
	var limit int
	cmd := &cobra.Command{
		Use:   "history KIND/NAME",
		Short: "Show an object's reconcile history: each reconcile, its outcome, what it changed and its trace",
		Long: "Prints the reconciles of an object, oldest first: when, which controller and worker, the\n" +
			"revision it acted on, the outcome (unchanged, changed, requeue, error, terminal), what it\n" +
			"changed or why it failed, how long it took and its trace (homeostat trace ID). The history\n" +
			"outlives the object: a deleted object's history can still be read.",
		Example: "  homeostat history deployment/web\n  homeostat history replicaset web-7d9f --since 1h\n" +
			"  homeostat history deployment/web --controller deployment -o json",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			q := url.Values{}
			if since != "" {
				q.Set("since", since)
			}
			if controller != "" {
				q.Set("controller", controller)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			var h api.ReconcileHistory
			if err := getSubresource(cmd.Context(), g, args, "history?"+q.Encode(), &h); err != nil {
				return err
			}
			return printHistory(cmd.OutOrStdout(), h, output)
		},
	}
	f := cmd.Flags()
	f.StringVar(&since, "since", "", "only reconciles newer than this: a duration (1h) or an RFC 3339 time")
	f.StringVar(&controller, "controller", "", "only the reconciles of this controller (deployment, replicaset, …)")
	f.IntVar(&limit, "limit", 0, "only the latest this many reconciles")
	f.StringVarP(&output, "output", "o", "", "output format: json or yaml (a ReconcileHistory)")
	return cmd
}

func printHistory(out io.Writer, h api.ReconcileHistory, format string) error {
	if format != "" {
		return printStructured(out, h, format)
	}
	if len(h.Items) == 0 {
		_, err := fmt.Fprintln(out, "No reconciles recorded.")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCONTROLLER\tREVISION\tATTEMPT\tOUTCOME\tDURATION\tDETAIL\tWORKER\tTRACE")
	for _, e := range h.Items {
		rev := "-" // caused by something else than the object: a child, a resync
		if e.Revision > 0 {
			rev = strconv.FormatUint(e.Revision, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format("2006-01-02 15:04:05.000"), e.Controller,
			rev, e.Attempt, e.Outcome, historyDuration(e), historyDetail(e), e.Worker, e.TraceID)
	}
	return tw.Flush()
}

func historyDuration(e reconcile.HistoryEntry) string {
	if e.Outcome == reconcile.OutcomeInProgress {
		return "-"
	}
	return (time.Duration(e.DurationMS * float64(time.Millisecond))).Round(10 * time.Microsecond).String()
}

// historyDetail is what a reconcile changed, why it failed, or when it
// comes back.
func historyDetail(e reconcile.HistoryEntry) string {
	if d := e.Detail(); d != "" {
		return d
	}
	return "-"
}

// checkOutput accepts the structured formats of explain and history.
func checkOutput(format string) error {
	if format != "" && format != "json" && format != "yaml" {
		return fmt.Errorf("--output must be json or yaml, not %q", format)
	}
	return nil
}

// printStructured writes v as JSON or YAML.
func printStructured(out io.Writer, v any, format string) error {
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// getSubresource reads a read-only subresource (and its query) of the one
// object args name (KIND/NAME or KIND NAME) into out.
func getSubresource(ctx context.Context, g *globals, args []string, sub string, out any) error {
	kind, names := splitKindName(args)
	if len(names) != 1 {
		return fmt.Errorf("name one object: KIND/NAME")
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
	return c.Do(ctx, http.MethodGet, res.Path(ns, names[0])+"/"+sub, nil, "", out)
}
