package chaos

import (
	"fmt"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// history records every operation of a run with the times it was invoked
// and returned (nanoseconds since the run began).
type history struct {
	start time.Time

	mu      sync.Mutex
	ops     []porcupine.Operation
	lists   []listOp
	watches []*watchLog
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return time.Since(h.start).Nanoseconds() }

// kv records one operation on a key. Reads that failed tell nothing and
// are left out; writes of unknown outcome return at never.
func (h *history) kv(client int, in kvInput, call int64, out kvOutput) {
	ret := h.now()
	if out.Outcome == outUnknown {
		if in.Kind == opGet {
			return
		}
		ret = never
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// listOp is one list that succeeded: what it held and at which revision.
type listOp struct {
	Call, Return int64
	Rev          uint64
	Items        map[string]item
}

type item struct {
	Value string
	Rev   uint64
}

func (h *history) list(l listOp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lists = append(h.lists, l)
}

// watchLog is what one watcher saw: its events in order, split in
// segments where it had to list again.
type watchLog struct {
	mu       sync.Mutex
	segments [][]watchEvent
	// last is the state the watcher holds, by key.
	last map[string]item
	// resumes counts watch streams that ended and were resumed from the
	// last revision; relists counts 410 Gone answers that forced a list.
	resumes, relists int
	// notes are what the watcher went through, for a reader of a failure.
	notes []string
}

func (w *watchLog) note(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.notes) < 1000 {
		w.notes = append(w.notes, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
}

type watchEvent struct {
	Type  string
	Key   string
	Value string
	Rev   uint64
}

func (h *history) newWatch() *watchLog {
	w := &watchLog{segments: [][]watchEvent{nil}, last: map[string]item{}}
	h.mu.Lock()
	h.watches = append(h.watches, w)
	h.mu.Unlock()
	return w
}

func (w *watchLog) event(ev watchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seg := len(w.segments) - 1
	w.segments[seg] = append(w.segments[seg], ev)
	if ev.Type == "DELETED" {
		delete(w.last, ev.Key)
	} else {
		w.last[ev.Key] = item{ev.Value, ev.Rev}
	}
}

// relist starts a new segment from a fresh list.
func (w *watchLog) relist(items map[string]item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.relists++
	w.segments = append(w.segments, nil)
	w.last = items
}

func (w *watchLog) resumed() {
	w.mu.Lock()
	w.resumes++
	w.mu.Unlock()
}

func (w *watchLog) state() map[string]item {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]item, len(w.last))
	for k, v := range w.last {
		out[k] = v
	}
	return out
}
