package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/schemas"
	"github.com/homeostat/homeostat/table"
)

type tabWriter struct{ w *tabwriter.Writer }

func newTabWriter(out io.Writer) *tabWriter {
	return &tabWriter{w: tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)}
}

func (t *tabWriter) row(cells ...string) { fmt.Fprintln(t.w, strings.Join(cells, "\t")) }
func (t *tabWriter) flush()              { _ = t.w.Flush() }

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func age(t time.Time) string { return table.Age(t) }

func shortDuration(d time.Duration) string { return table.ShortDuration(d) }

// columnsFor are the columns the CLI prints, of cols or else of the
// built-in kind: those of priority 0, and the wide ones with -o wide.
func columnsFor(cols []table.Column, kind string, wide bool) []table.Column {
	if cols == nil {
		cols = table.Columns(kind)
	}
	var out []table.Column
	for _, c := range cols {
		if c.Priority == 0 || wide {
			out = append(out, c)
		}
	}
	return out
}

// kindColumns are a custom kind's columns, as its ResourceDefinition
// declares them, or Name and Age; nil for a built-in kind.
func kindColumns(ctx context.Context, c *client.Client, res client.Resource) []table.Column {
	if schemas.Builtin(res.Group, res.Plural) {
		return nil
	}
	var def struct {
		Spec schemas.DefinitionSpec `json:"spec"`
	}
	err := c.Do(ctx, http.MethodGet, "/apis/homeostat.io/v1/resourcedefinitions/"+res.Plural+"."+res.Group, nil, "", &def)
	if err != nil || len(def.Spec.PrinterColumns) == 0 {
		return table.Default
	}
	return table.Printed(def.Spec.PrinterColumns)
}
