package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/homeostat/homeostat/object"
)

func newDescribe(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe KIND NAME",
		Short: "Show an object in detail: metadata, spec, status and conditions",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c := g.client()
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
