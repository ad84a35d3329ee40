package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func newDescribe(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe KIND NAME",
		Short: "Show an object in detail: metadata, spec, status and conditions",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := g.client()
			if err != nil {
				return err
			}
			kind, names := splitKindName(args)
			if len(names) == 0 {
				return fmt.Errorf("describe needs a name: describe %s NAME", kind)
			}
			res, err := resolveKind(ctx, c, kind)
			if err != nil {
				return err
			}
			for i, n := range names {
				o, err := c.Get(ctx, res, g.namespace, n)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				describe(cmd.OutOrStdout(), o)
				describeReconcile(ctx, cmd.OutOrStdout(), c, res, o)
				describeEvents(ctx, cmd.OutOrStdout(), c, o)
			}
			return nil
		},
	}
}

func describe(out io.Writer, o *object.Object) {
	m := o.Metadata
	fmt.Fprintf(out, "Name:               %s\n", m.Name)
	if m.Namespace != "" {
		fmt.Fprintf(out, "Namespace:          %s\n", m.Namespace)
	}
	fmt.Fprintf(out, "Kind:               %s (%s)\n", o.Kind, o.APIVersion)
	fmt.Fprintf(out, "UID:                %s\n", m.UID)
	fmt.Fprintf(out, "Resource version:   %s   Generation: %d\n", m.ResourceVersion, m.Generation)
	fmt.Fprintf(out, "Created:            %s (%s ago)\n", m.CreationTimestamp.Format("2006-01-02T15:04:05Z07:00"), age(m.CreationTimestamp))
	if m.DeletionTimestamp != nil {
		fmt.Fprintf(out, "Deletion requested: %s\n", m.DeletionTimestamp.Format("2006-01-02T15:04:05Z07:00"))
	}
	fmt.Fprintf(out, "Labels:             %s\n", mapText(m.Labels))
	ann := map[string]string{}
	for k, v := range m.Annotations {
		if k != "homeostat.io/last-applied" {
			ann[k] = v
		}
	}
	fmt.Fprintf(out, "Annotations:        %s\n", mapText(ann))
	for _, r := range m.OwnerReferences {
		fmt.Fprintf(out, "Controlled by:      %s/%s\n", r.Kind, r.Name)
	}
	if len(m.Finalizers) > 0 {
		fmt.Fprintf(out, "Finalizers:         %s\n", strings.Join(m.Finalizers, ", "))
	}
	section(out, "Spec", o.Spec, nil)
	var status struct {
		Conditions []object.Condition `json:"conditions"`
	}
	_ = json.Unmarshal(o.Status, &status)
	section(out, "Status", o.Status, []string{"conditions"})
	if len(status.Conditions) > 0 {
		fmt.Fprintln(out, "Conditions:")
		tw := newTabWriter(out)
		tw.row("  TYPE", "STATUS", "REASON", "SINCE", "MESSAGE")
		for _, c := range status.Conditions {
			tw.row("  "+c.Type, c.Status, c.Reason, age(c.LastTransitionTime), c.Message)
		}
		tw.flush()
	}
}

func mapText(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, k+"="+m[k])
	}
	return strings.Join(lines, "\n                    ")
}

// section prints raw JSON as indented YAML, leaving out the given keys.
func section(out io.Writer, title string, raw json.RawMessage, skip []string) {
	if len(raw) == 0 {
		return
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	for _, k := range skip {
		delete(m, k)
	}
	if len(m) == 0 {
		return
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return
	}
	fmt.Fprintf(out, "%s:\n", title)
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		fmt.Fprintf(out, "  %s\n", line)
	}
}

// describeReconcile shows how the loops are doing with the object: the
// trace of its latest write and, per failing controller, the retry state.
func describeReconcile(ctx context.Context, out io.Writer, c *client.Client, res client.Resource, o *object.Object) {
	var st struct {
		TraceID string                     `json:"traceID"`
		Retries map[string]json.RawMessage `json:"retries"`
	}
	if err := c.Do(ctx, http.MethodGet, res.Path(o.Metadata.Namespace, o.Metadata.Name)+"/reconcile", nil, "", &st); err != nil {
		return
	}
	fmt.Fprintln(out, "Reconcile:")
	if st.TraceID != "" {
		fmt.Fprintf(out, "  Last write trace:  %s   (homeostat trace %s)\n", st.TraceID, st.TraceID)
	}
	if len(st.Retries) == 0 {
		fmt.Fprintln(out, "  Retries:           none: every controller's last reconcile succeeded")
		return
	}
	names := make([]string, 0, len(st.Retries))
	for n := range st.Retries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var r struct {
			Attempts    uint64     `json:"attempts"`
			LastError   string     `json:"lastError"`
			LastAttempt time.Time  `json:"lastAttempt"`
			NextRetry   *time.Time `json:"nextRetry"`
			Terminal    bool       `json:"terminal"`
			TraceID     string     `json:"traceID"`
		}
		if json.Unmarshal(st.Retries[n], &r) != nil {
			continue
		}
		fmt.Fprintf(out, "  %s: failing, %d attempt(s), last %s ago\n", n, r.Attempts, age(r.LastAttempt))
		fmt.Fprintf(out, "    Last error:  %s\n", r.LastError)
		switch {
		case r.Terminal:
			fmt.Fprintln(out, "    Next retry:  none (terminal: waits for the object to change)")
		case r.NextRetry != nil:
			fmt.Fprintf(out, "    Next retry:  in %s (%s)\n", shortDuration(time.Until(*r.NextRetry)), r.NextRetry.Format(time.RFC3339))
		}
		if r.TraceID != "" {
			fmt.Fprintf(out, "    Trace:       %s\n", r.TraceID)
		}
	}
}

// describeEvents lists the recent events about the object.
func describeEvents(ctx context.Context, out io.Writer, c *client.Client, o *object.Object) {
	evRes, err := c.ResourceFor(ctx, "events")
	if err != nil {
		return
	}
	ns := o.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	l, err := c.List(ctx, evRes, ns, client.ListOptions{FieldSelector: "involvedObject.uid=" + o.Metadata.UID})
	if err != nil {
		return
	}
	if len(l.Items) == 0 {
		fmt.Fprintln(out, "Events:             <none>")
		return
	}
	type row struct {
		last                          time.Time
		typ, reason, count, from, msg string
	}
	var rows []row
	for _, o := range l.Items {
		e, err := kinds.EventOf(o)
		if err != nil {
			continue
		}
		t, _ := time.Parse(time.RFC3339, e.LastTimestamp)
		rows = append(rows, row{t, e.Type, e.Reason, fmt.Sprint(e.Count), e.Source.Component, e.Message})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].last.Before(rows[j].last) })
	fmt.Fprintln(out, "Events:")
	tw := newTabWriter(out)
	tw.row("  TYPE", "REASON", "AGE", "COUNT", "FROM", "MESSAGE")
	for _, r := range rows {
		tw.row("  "+r.typ, r.reason, age(r.last), r.count, r.from, r.msg)
	}
	tw.flush()
}
