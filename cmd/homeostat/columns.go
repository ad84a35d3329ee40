package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/homeostat/homeostat/object"
)

type tabWriter struct{ w *tabwriter.Writer }

func newTabWriter(out io.Writer) *tabWriter {
	return &tabWriter{w: tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)}
}

func (t *tabWriter) row(cells ...string) { fmt.Fprintln(t.w, strings.Join(cells, "\t")) }
func (t *tabWriter) flush()              { _ = t.w.Flush() }

type column struct {
	name  string
	value func(o *object.Object, doc map[string]any) string
}

// path reads a nested field of a decoded object.
func path(doc map[string]any, keys ...string) any {
	var cur any = doc
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func num(doc map[string]any, keys ...string) int64 {
	if f, ok := path(doc, keys...).(float64); ok {
		return int64(f)
	}
	return 0
}

func str(doc map[string]any, keys ...string) string {
	if v := path(doc, keys...); v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// age renders a duration the way kubectl does: 45s, 12m, 3h, 2d.
func age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return shortDuration(time.Since(t))
}

func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

var (
	nameCol = column{"NAME", func(o *object.Object, _ map[string]any) string { return o.Metadata.Name }}
	ageCol  = column{"AGE", func(o *object.Object, _ map[string]any) string { return age(o.Metadata.CreationTimestamp) }}
)

func columnsFor(kind string, wide bool) []column {
	if cols := workloadColumns(kind, wide); cols != nil {
		return cols
	}
	return otherColumns(kind, wide)
}

func workloadColumns(kind string, wide bool) []column {
	var cols []column
	switch kind {
	case "Pod":
		cols = []column{nameCol, {"READY", podReady}, {"STATUS", podStatus}, {"RESTARTS", podRestarts}, ageCol}
		if wide {
			cols = append(cols, column{"IP", func(_ *object.Object, d map[string]any) string { return orNone(str(d, "status", "podIP")) }},
				column{"NODE", func(_ *object.Object, d map[string]any) string { return orNone(str(d, "spec", "nodeName")) }})
		}
	case "Deployment":
		cols = []column{nameCol,
			{"READY", func(_ *object.Object, d map[string]any) string {
				return fmt.Sprintf("%d/%d", num(d, "status", "readyReplicas"), num(d, "spec", "replicas"))
			}},
			{"UP-TO-DATE", func(_ *object.Object, d map[string]any) string {
				return fmt.Sprint(num(d, "status", "updatedReplicas"))
			}},
			{"AVAILABLE", func(_ *object.Object, d map[string]any) string {
				return fmt.Sprint(num(d, "status", "availableReplicas"))
			}},
			ageCol}
		if wide {
			cols = append(cols, column{"CONTAINERS", containerNames}, column{"SELECTOR", selectorText})
		}
	case "ReplicaSet":
		cols = []column{nameCol,
			{"DESIRED", func(_ *object.Object, d map[string]any) string { return fmt.Sprint(num(d, "spec", "replicas")) }},
			{"CURRENT", func(_ *object.Object, d map[string]any) string { return fmt.Sprint(num(d, "status", "replicas")) }},
			{"READY", func(_ *object.Object, d map[string]any) string { return fmt.Sprint(num(d, "status", "readyReplicas")) }},
			ageCol}
		if wide {
			cols = append(cols, column{"CONTAINERS", containerNames}, column{"SELECTOR", selectorText})
		}
	case "DaemonSet":
		cols = []column{nameCol,
			{"DESIRED", func(_ *object.Object, d map[string]any) string {
				return fmt.Sprint(num(d, "status", "desiredNumberScheduled"))
			}},
			{"CURRENT", func(_ *object.Object, d map[string]any) string {
				return fmt.Sprint(num(d, "status", "currentNumberScheduled"))
			}},
			{"READY", func(_ *object.Object, d map[string]any) string { return fmt.Sprint(num(d, "status", "numberReady")) }},
			{"UP-TO-DATE", func(_ *object.Object, d map[string]any) string {
				return fmt.Sprint(num(d, "status", "updatedNumberScheduled"))
			}},
			{"AVAILABLE", func(_ *object.Object, d map[string]any) string {
				return fmt.Sprint(num(d, "status", "numberAvailable"))
			}},
			ageCol}
	case "Job":
		cols = []column{nameCol, {"STATUS", jobStatus},
			{"COMPLETIONS", func(_ *object.Object, d map[string]any) string {
				return fmt.Sprintf("%d/%d", num(d, "status", "succeeded"), num(d, "spec", "completions"))
			}},
			{"DURATION", jobDuration}, ageCol}
	}
	return cols
}

func otherColumns(kind string, wide bool) []column {
	var cols []column
	switch kind {
	case "Node":
		cols = []column{nameCol, {"STATUS", nodeStatus}, ageCol,
			{"PODS", func(_ *object.Object, d map[string]any) string {
				return orNone(str(d, "status", "allocatable", "pods"))
			}}}
		if wide {
			cols = append(cols, column{"CPU", func(_ *object.Object, d map[string]any) string { return str(d, "status", "allocatable", "cpu") }},
				column{"MEMORY", func(_ *object.Object, d map[string]any) string { return str(d, "status", "allocatable", "memory") }},
				column{"ADDRESS", nodeAddress})
		}
	case "Namespace":
		cols = []column{nameCol, {"STATUS", func(o *object.Object, d map[string]any) string {
			if o.Metadata.Deleting() {
				return "Terminating"
			}
			return orNone(str(d, "status", "phase"))
		}}, ageCol}
	case "Event":
		cols = []column{
			{"LAST SEEN", func(_ *object.Object, d map[string]any) string { return sinceRFC3339(str(d, "spec", "lastTimestamp")) }},
			{"TYPE", func(_ *object.Object, d map[string]any) string { return str(d, "spec", "type") }},
			{"REASON", func(_ *object.Object, d map[string]any) string { return str(d, "spec", "reason") }},
			{"OBJECT", func(_ *object.Object, d map[string]any) string {
				return strings.ToLower(str(d, "spec", "involvedObject", "kind")) + "/" + str(d, "spec", "involvedObject", "name")
			}},
			{"MESSAGE", func(_ *object.Object, d map[string]any) string { return str(d, "spec", "message") }},
		}
	case "ResourceDefinition":
		cols = []column{nameCol,
			{"KIND", func(_ *object.Object, d map[string]any) string { return str(d, "spec", "kind") }},
			{"SCOPE", func(_ *object.Object, d map[string]any) string { return str(d, "spec", "scope") }},
			ageCol}
	default:
		cols = []column{nameCol, ageCol}
	}
	return cols
}

func sinceRFC3339(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return "<unknown>"
	}
	return age(t)
}

func containerStatuses(d map[string]any) []map[string]any {
	list, _ := path(d, "status", "containerStatuses").([]any)
	var out []map[string]any
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func podReady(_ *object.Object, d map[string]any) string {
	total := 0
	if cs, ok := path(d, "spec", "containers").([]any); ok {
		total = len(cs)
	}
	ready := 0
	for _, cs := range containerStatuses(d) {
		if cs["ready"] == true {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, total)
}

// podStatus is what kubectl shows: a waiting or terminated reason when a
// container has one, Terminating during deletion, else the phase.
func podStatus(o *object.Object, d map[string]any) string {
	if o.Metadata.Deleting() {
		return "Terminating"
	}
	if r := str(d, "status", "reason"); r != "" {
		return r
	}
	for _, cs := range containerStatuses(d) {
		if r := str(cs, "state", "waiting", "reason"); r != "" {
			return r
		}
		if r := str(cs, "state", "terminated", "reason"); r != "" && str(d, "status", "phase") != "Succeeded" {
			return r
		}
	}
	if p := str(d, "status", "phase"); p != "" {
		return p
	}
	return "Pending"
}

func podRestarts(_ *object.Object, d map[string]any) string {
	var n int64
	for _, cs := range containerStatuses(d) {
		n += num(cs, "restartCount")
	}
	return fmt.Sprint(n)
}

func containerNames(_ *object.Object, d map[string]any) string {
	cs, _ := path(d, "spec", "template", "spec", "containers").([]any)
	var names []string
	for _, c := range cs {
		names = append(names, str(c.(map[string]any), "name"))
	}
	return strings.Join(names, ",")
}

func selectorText(_ *object.Object, d map[string]any) string {
	m, _ := path(d, "spec", "selector", "matchLabels").(map[string]any)
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(parts)
	return orNone(strings.Join(parts, ","))
}

func jobStatus(_ *object.Object, d map[string]any) string {
	conds, _ := path(d, "status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] == "True" && (m["type"] == "Complete" || m["type"] == "Failed") {
			return fmt.Sprint(m["type"])
		}
	}
	return "Running"
}

func jobDuration(_ *object.Object, d map[string]any) string {
	start, err := time.Parse(time.RFC3339, str(d, "status", "startTime"))
	if err != nil {
		return ""
	}
	end := time.Now()
	if t, err := time.Parse(time.RFC3339, str(d, "status", "completionTime")); err == nil {
		end = t
	}
	return shortDuration(end.Sub(start))
}

func nodeStatus(_ *object.Object, d map[string]any) string {
	conds, _ := path(d, "status", "conditions").([]any)
	status := "Unknown"
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			switch m["status"] {
			case "True":
				status = "Ready"
			case "False":
				status = "NotReady"
			}
		}
	}
	if path(d, "spec", "unschedulable") == true {
		status += ",SchedulingDisabled"
	}
	return status
}

func nodeAddress(_ *object.Object, d map[string]any) string {
	addrs, _ := path(d, "status", "addresses").([]any)
	for _, a := range addrs {
		m, _ := a.(map[string]any)
		return str(m, "address")
	}
	return "<none>"
}
