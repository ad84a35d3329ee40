package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
)

// HistoryEntry records one reconcile of an object: when, by which
// controller and worker, on what revision, how it ended and what it
// changed. The runtime appends one per reconcile to the object's history
// (bus.History), which outlives the reconcile's trace and the retry
// record a success deletes.
type HistoryEntry struct {
	Time       time.Time `json:"time"`
	Controller string    `json:"controller"`
	Kind       string    `json:"kind,omitempty"`
	Key        string    `json:"key"`
	// Revision is the object's revision that caused the reconcile (0 when
	// it was not caused by a change of the object: a resync, a child).
	Revision uint64 `json:"revision,omitempty"`
	Attempt  uint64 `json:"attempt"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// Changes are the writes the reconcile made, summed by verb and
	// resource.
	Changes      []bus.ChangeSummary `json:"changes,omitempty"`
	Error        string              `json:"error,omitempty"`
	RequeueAfter string              `json:"requeueAfter,omitempty"`
	// DurationMS is how long the reconcile ran, in milliseconds.
	DurationMS float64 `json:"durationMs"`
	TraceID    string  `json:"traceID,omitempty"`
	// Worker names the process that ran it (its identity).
	Worker string `json:"worker,omitempty"`
}

// Outcomes of a reconcile, as its history entry gives them.
const (
	// OutcomeUnchanged: it succeeded and wrote nothing.
	OutcomeUnchanged = "unchanged"
	// OutcomeChanged: it succeeded and wrote what Changes lists.
	OutcomeChanged = "changed"
	// OutcomeRequeue: it succeeded and asked to run again after
	// RequeueAfter.
	OutcomeRequeue = "requeue"
	// OutcomeError: it failed and will be retried after a backoff.
	OutcomeError = "error"
	// OutcomeTerminal: it failed in a way retrying cannot fix.
	OutcomeTerminal = "terminal"
	// OutcomeInProgress marks a reconcile still running after
	// inProgressAfter; the entry of its end follows it.
	OutcomeInProgress = "in progress"
)

// inProgressAfter is how long a reconcile runs before its history says it
// is in progress. Most end long before, and record only their end.
const inProgressAfter = time.Second

// historyWriter appends the entries of a process's reconciles, from a
// goroutine of its own: a reconcile hands its entry over and goes on,
// whatever the store's state (an entry that finds the hand-over full is
// dropped and counted, never waited for).
type historyWriter struct {
	h       *bus.History
	log     *slog.Logger
	entries chan historyItem
	// warned: a failed append is logged once, not once per reconcile.
	warned sync.Once
}

type historyItem struct {
	resource string
	entry    HistoryEntry
}

// historyBacklog is how many entries may wait for the store.
const historyBacklog = 4096

func newHistoryWriter(h *bus.History, log *slog.Logger) *historyWriter {
	return &historyWriter{h: h, log: log, entries: make(chan historyItem, historyBacklog)}
}

// run appends the entries handed over until ctx ends, then those still
// waiting.
func (w *historyWriter) run(ctx context.Context) {
	if w == nil {
		return
	}
	for {
		select {
		case it := <-w.entries:
			w.write(it)
		case <-ctx.Done():
			for {
				select {
				case it := <-w.entries:
					w.write(it)
				default:
					return
				}
			}
		}
	}
}

// outcome names how a reconcile ended.
func outcome(res Result, err error, changes []bus.ChangeSummary) string {
	switch {
	case err != nil && IsTerminal(err):
		return OutcomeTerminal
	case err != nil:
		return OutcomeError
	case res.RequeueAfter > 0:
		return OutcomeRequeue
	case len(changes) > 0:
		return OutcomeChanged
	}
	return OutcomeUnchanged
}

// append hands over an entry of the object resource/key; it never
// blocks nor fails the reconcile.
func (w *historyWriter) append(resource string, e HistoryEntry) {
	if w == nil || resource == "" {
		return
	}
	select {
	case w.entries <- historyItem{resource, e}:
	default:
		historyDropped.Inc()
	}
}

func (w *historyWriter) write(it historyItem) {
	data, err := json.Marshal(it.entry)
	if err == nil {
		err = w.h.Append(it.resource, it.entry.Key, data)
	}
	if err != nil {
		historyDropped.Inc()
		w.warned.Do(func() {
			w.log.Warn("recording reconcile history (further failures are counted in homeostat_reconcile_history_dropped_total)",
				"controller", it.entry.Controller, "key", it.entry.Key, "err", err)
		})
	}
}

// Detail says in a line what a reconcile changed, why it failed, or when
// it comes back: "created 3 pods (web-0, web-1, web-2); again in 10s".
func (e HistoryEntry) Detail() string {
	var parts []string
	if e.Error != "" {
		msg, _, _ := strings.Cut(e.Error, "\n")
		parts = append(parts, msg)
	}
	for _, c := range e.Changes {
		names := make([]string, len(c.Keys))
		for i, k := range c.Keys {
			names[i] = k[strings.LastIndex(k, ".")+1:]
		}
		more := ""
		if c.Count > len(c.Keys) {
			more = ", …"
		}
		parts = append(parts, fmt.Sprintf("%s %d %s (%s%s)", c.Verb, c.Count, c.Resource, strings.Join(names, ", "), more))
	}
	if e.RequeueAfter != "" {
		parts = append(parts, "again in "+e.RequeueAfter)
	}
	if e.Outcome == OutcomeInProgress {
		parts = append(parts, fmt.Sprintf("still running %s after it began", inProgressAfter))
	}
	return strings.Join(parts, "; ")
}
