package explain

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// historyShown is how many of the object's reconciles the text shows.
const historyShown = 5

// Text writes an answer as a person reads it: one line for a healthy
// object; otherwise the progress, the tree, the causes, the loops, the
// latest reconciles and the root cause.
func Text(out io.Writer, e *Explanation, now time.Time) error {
	p := &printer{out: out, now: now}
	p.line(0, "%s", e.Summary)
	if e.Health == Healthy && len(e.Causes) == 0 {
		return p.err
	}
	if len(e.Progress) > 0 {
		var parts []string
		for _, c := range e.Progress {
			parts = append(parts, fmt.Sprintf("%s %d", c.Name, c.Value))
		}
		p.line(1, "%s", strings.Join(parts, ", "))
	}
	p.section("Tree:")
	p.node(e.Tree, 1)
	if len(e.Causes) > 0 {
		p.section("Causes:")
		for i, c := range e.Causes {
			p.line(1, "%d. %s", i+1, causeLine(c))
			for _, d := range c.Detail {
				p.line(3, "%s", d)
			}
		}
	}
	if len(e.Loops) > 0 {
		p.section("Loops:")
		for _, l := range e.Loops {
			p.line(1, "%s, %s %s: %s", l.Controller, l.Object.Kind, l.Object.Name, p.loopState(l))
		}
	}
	if n := len(e.History); n > 0 {
		p.section("Latest reconciles:")
		for _, h := range e.History[max(0, n-historyShown):] {
			what := h.Outcome
			if d := h.Detail(); d != "" {
				what += ": " + d
			}
			p.line(1, "%s ago  %s  %s (%.1fms)  trace %s", ago(now, h.Time), h.Controller, what, h.DurationMS, h.TraceID)
		}
	}
	if len(e.Hidden) > 0 {
		p.section("Left out (you may not read them): " + strings.Join(e.Hidden, ", "))
	}
	if rc := e.RootCause; rc != nil {
		p.section(fmt.Sprintf("Root cause: %s %s: %s", rc.Object.Kind, rc.Object.Name, rc.Reason))
		if rc.Fix != "" {
			p.line(1, "Fix: %s", rc.Fix)
		}
	}
	return p.err
}

type printer struct {
	out io.Writer
	now time.Time
	err error
}

func (p *printer) line(indent int, format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.out, "%s%s\n", strings.Repeat("  ", indent), fmt.Sprintf(format, args...))
}

func (p *printer) section(title string) {
	p.line(0, "")
	p.line(0, "%s", title)
}

var healthMarks = map[string]string{Healthy: "✓", Progressing: "~", Unhealthy: "✗", Unknown: "?"}

func (p *printer) node(n *Node, indent int) {
	who := n.Kind + " " + n.Name
	if n.Count > 1 {
		who = fmt.Sprintf("%d %ss (%s", n.Count, n.Kind, strings.Join(n.Names, ", "))
		if n.Count > len(n.Names) {
			who += ", …"
		}
		who += ")"
	}
	mark := healthMarks[n.Health]
	if n.OnRootCause {
		mark += "*"
	}
	line := fmt.Sprintf("%s %s  %s", mark, who, n.Status)
	if n.Reason != "" {
		line += "  " + n.Reason
		if n.Message != "" {
			line += ": " + n.Message
		}
	}
	p.line(indent, "%s", line)
	for _, c := range n.Children {
		p.node(c, indent+1)
	}
}

func (p *printer) loopState(l Loop) string {
	var s string
	switch l.State {
	case StateQueued:
		s = "queued"
		if l.Since != nil {
			s += " for " + ago(p.now, *l.Since)
		}
	case StateInFlight:
		s = "in flight"
		if l.Since != nil {
			s += " for " + ago(p.now, *l.Since)
		}
		if l.Worker != "" {
			s += " on " + l.Worker
		}
	case StateBackingOff:
		s = fmt.Sprintf("backing off after attempt %d", l.Attempt)
		if l.NextRetry != nil {
			s += ", next in " + ago(*l.NextRetry, p.now)
		}
		if l.LastError != "" {
			s += ": " + firstLine(l.LastError)
		}
	case StateRequeued:
		s = "requeued"
		if l.NextRetry != nil {
			s += ", next reconcile in " + ago(*l.NextRetry, p.now)
		}
	case StateFailed:
		s = "failed for good, waiting for the object to change: " + firstLine(l.LastError)
	case StateIdle:
		s = "idle"
		if l.Last != nil {
			s += fmt.Sprintf(", last reconcile %s ago: %s in %.1fms", ago(p.now, l.Last.Time), l.Last.Outcome, l.Last.DurationMS)
		} else if l.Message == "" {
			s += ", no reconcile recorded"
		}
	default:
		s = strings.ToLower(l.State)
	}
	if l.Message != "" {
		s += ": " + l.Message
	}
	if l.TraceID != "" {
		s += ", trace " + l.TraceID
	}
	return s
}
