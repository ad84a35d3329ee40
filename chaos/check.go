package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkLinearizable checks the per-key history with porcupine. It returns
// the keys whose histories are not linearizable (or could not be decided
// within the timeout). When dir is set, it writes there, for each such
// key, its history as text and porcupine's visualization.
func checkLinearizable(ops []porcupine.Operation, timeout time.Duration, dir string) (bad []string, undecided bool) {
	model := kvModel.ToModel()
	for _, part := range partitionByKey(ops) {
		res, info := porcupine.CheckOperationsVerbose(model, part, timeout)
		switch res {
		case porcupine.Illegal:
			key := part[0].Input.(kvInput).Key
			bad = append(bad, key)
			if dir != "" {
				_ = porcupine.VisualizePath(model, info, filepath.Join(dir, "linearizability-"+key+".html"))
				_ = os.WriteFile(filepath.Join(dir, "history-"+key+".txt"), []byte(describeHistory(part)+describeStuck(info)), 0o644)
			}
		case porcupine.Unknown:
			undecided = true
		}
	}
	return bad, undecided
}

// describeStuck shows where the longest linearization porcupine found ends:
// the operations after it are those no order can explain.
func describeStuck(info porcupine.LinearizationInfo) string {
	var longest []porcupine.Operation
	for _, partition := range info.PartialLinearizationsOperations() {
		for _, lin := range partition {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	b := fmt.Appendf(nil, "\nlongest linearization: %d operations, ending with:\n", len(longest))
	for _, op := range longest[max(0, len(longest)-5):] {
		b = fmt.Appendf(b, "  %s  client %d  %s\n", time.Duration(op.Call), op.ClientId, kvModel.DescribeOperation(op.Input, op.Output))
	}
	return string(b)
}

// describeHistory lists a key's operations by call time, for a reader.
func describeHistory(ops []porcupine.Operation) string {
	s := append([]porcupine.Operation(nil), ops...)
	sort.Slice(s, func(i, j int) bool { return s[i].Call < s[j].Call })
	var b []byte
	for _, op := range s {
		ret := "never"
		if op.Return != never {
			ret = time.Duration(op.Return).String()
		}
		b = fmt.Appendf(b, "%-14s %-14s client %-2d %s\n", time.Duration(op.Call), ret, op.ClientId,
			kvModel.DescribeOperation(op.Input, op.Output))
	}
	return string(b)
}

// writeFacts indexes the writes of a history by key.
type writeFacts struct {
	ops map[string][]porcupine.Operation
}

func indexWrites(ops []porcupine.Operation) writeFacts {
	f := writeFacts{ops: map[string][]porcupine.Operation{}}
	for _, op := range ops {
		in := op.Input.(kvInput)
		if in.Kind != opGet {
			f.ops[in.Key] = append(f.ops[in.Key], op)
		}
	}
	return f
}

// valueWritten reports whether some write of key carried value (its
// revision too, when the client learned it).
func (f writeFacts) valueWritten(key, value string, rev uint64) bool {
	for _, op := range f.ops[key] {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		if in.Kind == opDelete || in.Value != value {
			continue
		}
		return out.Outcome == outUnknown || out.Rev == rev || out.Rev == 0
	}
	return false
}

// checkLists holds every list to what the writes acknowledged before it:
// it must contain every object whose create (or update) was acknowledged
// before the list began, unless a delete of it was sent before the list
// returned; it must not contain an object whose delete was acknowledged
// before it began, unless it was written again before it returned; its
// revision must be at least that of every write acknowledged before it
// began; and everything it holds was written by someone.
func checkLists(ops []porcupine.Operation, lists []listOp) []string {
	facts := indexWrites(ops)
	var out []string
	for i, l := range lists {
		for key, writes := range facts.ops {
			mustHave, mustNot := false, false
			for _, op := range writes {
				in, o := op.Input.(kvInput), op.Output.(kvOutput)
				if o.Outcome == outOK && op.Return < l.Call && o.Rev > l.Rev {
					out = append(out, fmt.Sprintf("list %d at revision %d is older than the %s of %s acknowledged before it began (revision %d)",
						i, l.Rev, in.Kind, key, o.Rev))
				}
			}
			mustHave, mustNot = listExpectations(writes, l)
			it, has := l.Items[key]
			switch {
			case mustHave && !has:
				out = append(out, fmt.Sprintf("list %d (revision %d) misses %s, written and acknowledged before it began", i, l.Rev, key))
			case mustNot && has:
				out = append(out, fmt.Sprintf("list %d (revision %d) holds %s, deleted and acknowledged before it began", i, l.Rev, key))
			case has && !facts.valueWritten(key, it.Value, it.Rev):
				out = append(out, fmt.Sprintf("list %d holds %s=%s@%d, which nobody wrote", i, key, it.Value, it.Rev))
			}
		}
	}
	return out
}

// listExpectations says whether a list must hold a key, or must not, from
// the writes of that key: the last write acknowledged before the list began
// decides, unless another write of the key was in flight meanwhile.
func listExpectations(writes []porcupine.Operation, l listOp) (mustHave, mustNot bool) {
	last := -1
	for i, op := range writes {
		if op.Output.(kvOutput).Outcome == outOK && op.Return < l.Call && (last < 0 || op.Return > writes[last].Return) {
			last = i
		}
	}
	if last < 0 {
		return false, false
	}
	for i, op := range writes {
		if i != last && op.Call < l.Return && op.Return > writes[last].Call {
			return false, false // it may have come after, before the list ended
		}
	}
	if writes[last].Input.(kvInput).Kind == opDelete {
		return false, true
	}
	return true, false
}

// checkWatches holds each watcher to the writes and the final state: within
// a segment (between forced lists) revisions only grow and no change comes
// twice; every value it reports was written; and in the end it holds
// exactly the final state of the store.
func checkWatches(ops []porcupine.Operation, watches []*watchLog, final map[string]item) []string {
	facts := indexWrites(ops)
	var out []string
	for wi, w := range watches {
		w.mu.Lock()
		for si, seg := range w.segments {
			var lastRev uint64
			for _, ev := range seg {
				if ev.Rev <= lastRev {
					out = append(out, fmt.Sprintf("watch %d segment %d: %s %s at revision %d after revision %d (repeated or out of order)",
						wi, si, ev.Type, ev.Key, ev.Rev, lastRev))
				}
				lastRev = max(lastRev, ev.Rev)
				if ev.Type != "DELETED" && !facts.valueWritten(ev.Key, ev.Value, ev.Rev) {
					out = append(out, fmt.Sprintf("watch %d: %s %s=%s@%d, which nobody wrote", wi, ev.Type, ev.Key, ev.Value, ev.Rev))
				}
			}
		}
		w.mu.Unlock()
		out = append(out, diffStates(fmt.Sprintf("watch %d", wi), w.state(), final)...)
	}
	return out
}

// diffStates names every key where what a watcher holds differs from the store.
func diffStates(who string, got, want map[string]item) []string {
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case gok && !wok:
			out = append(out, fmt.Sprintf("%s holds %s=%s@%d, which the store no longer has", who, k, g.Value, g.Rev))
		case !gok && wok:
			out = append(out, fmt.Sprintf("%s misses %s=%s@%d", who, k, w.Value, w.Rev))
		case g != w:
			out = append(out, fmt.Sprintf("%s holds %s=%s@%d, the store %s@%d", who, k, g.Value, g.Rev, w.Value, w.Rev))
		}
	}
	return out
}

// lostWrites counts acknowledged writes that nothing later could have
// replaced and that the final state does not hold: writes the store lost.
func lostWrites(ops []porcupine.Operation, final map[string]item) []string {
	facts := indexWrites(ops)
	var out []string
	for key, writes := range facts.ops {
		for i, w := range writes {
			in, o := w.Input.(kvInput), w.Output.(kvOutput)
			if o.Outcome != outOK {
				continue
			}
			later := false
			for j, x := range writes {
				if j != i && x.Return > w.Call {
					later = true // it may have come after
					break
				}
			}
			if later {
				continue
			}
			f, has := final[key]
			switch {
			case in.Kind == opDelete && has:
				out = append(out, fmt.Sprintf("the delete of %s (revision %d) was acknowledged, yet it exists: %s@%d", key, o.Rev, f.Value, f.Rev))
			case in.Kind != opDelete && (!has || f.Value != in.Value):
				out = append(out, fmt.Sprintf("the %s of %s=%s (revision %d) was acknowledged, yet the store holds %v", in.Kind, key, in.Value, o.Rev, describe(f, has)))
			}
		}
	}
	sort.Strings(out)
	return out
}

func describe(it item, ok bool) string {
	if !ok {
		return "nothing"
	}
	return fmt.Sprintf("%s@%d", it.Value, it.Rev)
}
