package table

import (
	"fmt"
	"strings"
	"time"

	"github.com/homeostat/homeostat/object"
)

// eventField reads an Event's field at the top level, where core/v1 keeps
// it, or under spec, where earlier releases stored it.
func eventField(d map[string]any, keys ...string) string {
	if v := Str(d, keys...); v != "" {
		return v
	}
	return Str(d, append([]string{"spec"}, keys...)...)
}

var eventColumns = []Column{
	text("Last Seen", 0, func(_ *object.Object, d map[string]any) string { return sinceRFC3339(eventField(d, "lastTimestamp")) }),
	text("Type", 0, func(_ *object.Object, d map[string]any) string { return eventField(d, "type") }),
	text("Reason", 0, func(_ *object.Object, d map[string]any) string { return eventField(d, "reason") }),
	text("Object", 0, func(_ *object.Object, d map[string]any) string {
		return strings.ToLower(eventField(d, "involvedObject", "kind")) + "/" + eventField(d, "involvedObject", "name")
	}),
	text("Message", 0, func(_ *object.Object, d map[string]any) string { return eventField(d, "message") }),
	text("Source", 1, func(_ *object.Object, d map[string]any) string { return eventField(d, "source", "component") }),
	text("First Seen", 1, func(_ *object.Object, d map[string]any) string { return sinceRFC3339(eventField(d, "firstTimestamp")) }),
	text("Count", 1, func(_ *object.Object, d map[string]any) string { return eventField(d, "count") }),
	text("Name", 1, func(o *object.Object, _ map[string]any) string { return o.Metadata.Name }),
}

func containerStatuses(d map[string]any) []map[string]any {
	list, _ := Field(d, "status", "containerStatuses").([]any)
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
	if cs, ok := Field(d, "spec", "containers").([]any); ok {
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

// podStatus is what kubectl shows: the first container's waiting or
// terminated reason (Completed for a finished pod), Running again when a
// container has completed but another still runs, Terminating during the
// deletion of a pod that has not finished, else the phase.
func podStatus(o *object.Object, d map[string]any) string {
	phase := Str(d, "status", "phase")
	reason := phase
	if r := Str(d, "status", "reason"); r != "" {
		reason = r
	}
	statuses := containerStatuses(d)
	running := false
	for i := len(statuses) - 1; i >= 0; i-- {
		cs := statuses[i]
		_, term := Field(cs, "state", "terminated").(map[string]any)
		_, run := Field(cs, "state", "running").(map[string]any)
		switch {
		case Str(cs, "state", "waiting", "reason") != "":
			reason = Str(cs, "state", "waiting", "reason")
		case term && Str(cs, "state", "terminated", "reason") != "":
			reason = Str(cs, "state", "terminated", "reason")
		case term && Num(cs, "state", "terminated", "signal") != 0:
			reason = fmt.Sprintf("Signal:%d", Num(cs, "state", "terminated", "signal"))
		case term:
			reason = fmt.Sprintf("ExitCode:%d", Num(cs, "state", "terminated", "exitCode"))
		case run && Field(cs, "ready") == true:
			running = true
		}
	}
	if reason == "Completed" && running {
		reason = "Running"
	}
	if o.Metadata.Deleting() && phase != "Succeeded" && phase != "Failed" {
		return "Terminating"
	}
	if reason == "" {
		return "Pending"
	}
	return reason
}

func podRestarts(d map[string]any) string {
	var n int64
	for _, cs := range containerStatuses(d) {
		n += Num(cs, "restartCount")
	}
	return fmt.Sprint(n)
}

// containerField lists a field of a workload template's containers.
func containerField(d map[string]any, field string) string {
	cs, _ := Field(d, "spec", "template", "spec", "containers").([]any)
	var vals []string
	for _, c := range cs {
		m, _ := c.(map[string]any)
		vals = append(vals, Str(m, field))
	}
	return strings.Join(vals, ",")
}

func selectorText(_ *object.Object, d map[string]any) string {
	return orNone(mapText(Field(d, "spec", "selector", "matchLabels")))
}

func jobStatus(_ *object.Object, d map[string]any) string {
	conds, _ := Field(d, "status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] == "True" && (m["type"] == "Complete" || m["type"] == "Failed") {
			return fmt.Sprint(m["type"])
		}
	}
	return "Running"
}

func jobDuration(_ *object.Object, d map[string]any) string {
	start, err := time.Parse(time.RFC3339, Str(d, "status", "startTime"))
	if err != nil {
		return ""
	}
	end := time.Now()
	if t, err := time.Parse(time.RFC3339, Str(d, "status", "completionTime")); err == nil {
		end = t
	}
	return ShortDuration(end.Sub(start))
}

func nodeStatus(_ *object.Object, d map[string]any) string {
	conds, _ := Field(d, "status", "conditions").([]any)
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
	if Field(d, "spec", "unschedulable") == true {
		status += ",SchedulingDisabled"
	}
	return status
}

func nodeAddress(_ *object.Object, d map[string]any) string {
	addrs, _ := Field(d, "status", "addresses").([]any)
	for _, a := range addrs {
		m, _ := a.(map[string]any)
		if Str(m, "type") == "InternalIP" || len(addrs) == 1 {
			return Str(m, "address")
		}
	}
	return "<none>"
}

// PodStatus is the status kubectl shows for a pod (CrashLoopBackOff,
// Completed, Terminating, …).
func PodStatus(o *object.Object) string { return podStatus(o, DocOf(o)) }
