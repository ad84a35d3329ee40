package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/tracing"
)

func newTrace(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "trace (TRACE_ID | KIND/NAME)",
		Short: "Show a trace as a tree: an apply, the reconciles it caused, the binds and the starts",
		Long: `trace prints the spans Homeostat recorded for a trace, as a tree with
timings. Given KIND/NAME it shows the trace of the object's latest write —
for an object you applied, the apply and everything it set in motion.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := g.client()
			if err != nil {
				return err
			}
			id, err := traceIDOf(ctx, c, g.namespace, args[0])
			if err != nil {
				return err
			}
			var tr struct {
				Spans []tracing.Span `json:"spans"`
			}
			if err := c.Do(ctx, http.MethodGet, "/apis/homeostat.io/v1/traces/"+id, nil, "", &tr); err != nil {
				return err
			}
			printTrace(cmd.OutOrStdout(), id, tr.Spans)
			return nil
		},
	}
}

func traceIDOf(ctx context.Context, c *client.Client, ns, arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	res, err := c.ResourceFor(ctx, kind)
	if err != nil {
		return "", err
	}
	var st struct {
		TraceID string `json:"traceID"`
	}
	if err := c.Do(ctx, http.MethodGet, res.Path(ns, name)+"/reconcile", nil, "", &st); err != nil {
		return "", err
	}
	if st.TraceID == "" {
		return "", fmt.Errorf("%s carries no trace context", arg)
	}
	return st.TraceID, nil
}

// printTrace draws the spans as a tree ordered by start time.
func printTrace(out io.Writer, id string, spans []tracing.Span) {
	children := map[string][]tracing.Span{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	var roots []tracing.Span
	for _, s := range spans {
		if s.ParentID == "" || !ids[s.ParentID] {
			roots = append(roots, s)
		} else {
			children[s.ParentID] = append(children[s.ParentID], s)
		}
	}
	byStart := func(l []tracing.Span) {
		sort.Slice(l, func(i, j int) bool { return l[i].Start.Before(l[j].Start) })
	}
	byStart(roots)
	origin := time.Time{}
	if len(roots) > 0 {
		origin = roots[0].Start
	}
	fmt.Fprintf(out, "trace %s: %d spans\n", id, len(spans))
	var walk func(s tracing.Span, depth int)
	walk = func(s tracing.Span, depth int) {
		detail := []string{}
		for _, k := range []string{"key", "pod", "node", "result", "attempt", "http.response.status_code"} {
			if v := s.Attributes[k]; v != "" {
				detail = append(detail, k+"="+v)
			}
		}
		if s.Error != "" {
			detail = append(detail, "error="+s.Error)
		}
		fmt.Fprintf(out, "%+9s %8s  %s%s  %s\n", "+"+s.Start.Sub(origin).Round(time.Millisecond).String(),
			s.End.Sub(s.Start).Round(10*time.Microsecond), strings.Repeat("  ", depth), s.Name, strings.Join(detail, " "))
		kids := children[s.SpanID]
		byStart(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
}
