package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

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

// columnsFor are the columns the CLI prints: those of priority 0, and the
// wide ones with -o wide.
func columnsFor(kind string, wide bool) []table.Column {
	var out []table.Column
	for _, c := range table.Columns(kind) {
		if c.Priority == 0 || wide {
			out = append(out, c)
		}
	}
	return out
}
