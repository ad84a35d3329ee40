package chaos

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds a history entry: kind, key, value, revision read (for update),
// outcome, value or revision seen, call and return times.
func op(kind opKind, key, value string, readRev uint64, out outcome, outValue string, outRev uint64, call, ret int64) porcupine.Operation {
	return porcupine.Operation{Input: kvInput{Kind: kind, Key: key, Value: value, Rev: readRev},
		Output: kvOutput{Outcome: out, Value: outValue, Rev: outRev}, Call: call, Return: ret}
}

func TestLinearizabilityModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"create then read it", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opGet, "k", "", 0, outOK, "a", 5, 20, 30),
		}, true},
		{"a read that misses an acknowledged create", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opGet, "k", "", 0, outNotFound, "", 0, 20, 30),
		}, false},
		{"a stale read after an update", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opUpdate, "k", "b", 5, outOK, "", 7, 20, 30),
			op(opGet, "k", "", 0, outOK, "a", 5, 40, 50),
		}, false},
		{"concurrent read may see either", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opUpdate, "k", "b", 5, outOK, "", 7, 20, 40),
			op(opGet, "k", "", 0, outOK, "a", 5, 25, 35),
		}, true},
		{"two creates both acknowledged", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opCreate, "k", "b", 0, outOK, "", 6, 20, 30),
		}, false},
		{"an update from a stale revision that succeeded", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opUpdate, "k", "b", 5, outOK, "", 7, 20, 30),
			op(opUpdate, "k", "c", 5, outOK, "", 9, 40, 50),
		}, false},
		{"a conflict on a stale revision", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opUpdate, "k", "b", 5, outOK, "", 7, 20, 30),
			op(opUpdate, "k", "c", 5, outConflict, "", 0, 40, 50),
		}, true},
		{"a conflict with a concurrent delete", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opDelete, "k", "", 0, outOK, "", 6, 20, 40),
			op(opUpdate, "k", "b", 5, outConflict, "", 0, 25, 35),
		}, true},
		{"a conflict on the current revision", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opUpdate, "k", "b", 5, outConflict, "", 0, 20, 30),
		}, false},
		{"a write of unknown outcome that happened", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outUnknown, "", 0, 0, never),
			op(opGet, "k", "", 0, outOK, "a", 4, 20, 30),
		}, true},
		{"a write of unknown outcome that did not", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outUnknown, "", 0, 0, never),
			op(opGet, "k", "", 0, outNotFound, "", 0, 20, 30),
		}, true},
		{"revisions only grow", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opDelete, "k", "", 0, outOK, "", 6, 20, 30),
			op(opCreate, "k", "b", 0, outOK, "", 3, 40, 50),
		}, false},
		{"a read of a deleted key", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opDelete, "k", "", 0, outOK, "", 6, 20, 30),
			op(opGet, "k", "", 0, outOK, "a", 5, 40, 50),
		}, false},
		{"keys are independent", []porcupine.Operation{
			op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
			op(opGet, "j", "", 0, outNotFound, "", 0, 20, 30),
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad, undecided := checkLinearizable(tc.ops, 10*time.Second, "")
			if undecided {
				t.Fatal("undecided")
			}
			if (len(bad) == 0) != tc.ok {
				t.Fatalf("linearizable = %t, want %t", len(bad) == 0, tc.ok)
			}
		})
	}
}

func TestListCheck(t *testing.T) {
	created := op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10)
	for _, tc := range []struct {
		name  string
		ops   []porcupine.Operation
		list  listOp
		fails bool
	}{
		{"holds what was acknowledged", []porcupine.Operation{created},
			listOp{Call: 20, Return: 30, Rev: 5, Items: map[string]item{"k": {"a", 5}}}, false},
		{"misses what was acknowledged before it began", []porcupine.Operation{created},
			listOp{Call: 20, Return: 30, Rev: 5, Items: map[string]item{}}, true},
		{"revision older than an acknowledged write", []porcupine.Operation{created},
			listOp{Call: 20, Return: 30, Rev: 4, Items: map[string]item{"k": {"a", 5}}}, true},
		{"a create still in flight may be missing", []porcupine.Operation{op(opCreate, "k", "a", 0, outOK, "", 5, 15, 40)},
			listOp{Call: 20, Return: 30, Rev: 4, Items: map[string]item{}}, false},
		{"a delete in flight may have happened", []porcupine.Operation{created, op(opDelete, "k", "", 0, outOK, "", 6, 25, 40)},
			listOp{Call: 20, Return: 30, Rev: 6, Items: map[string]item{}}, false},
		{"holds what was deleted before it began", []porcupine.Operation{created, op(opDelete, "k", "", 0, outOK, "", 6, 12, 15)},
			listOp{Call: 20, Return: 30, Rev: 6, Items: map[string]item{"k": {"a", 5}}}, true},
		{"holds a value nobody wrote", []porcupine.Operation{created},
			listOp{Call: 20, Return: 30, Rev: 5, Items: map[string]item{"k": {"zzz", 5}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkLists(tc.ops, []listOp{tc.list})
			if (len(got) > 0) != tc.fails {
				t.Fatalf("violations %v, want failure %t", got, tc.fails)
			}
		})
	}
}

func TestWatchCheck(t *testing.T) {
	ops := []porcupine.Operation{
		op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
		op(opUpdate, "k", "b", 5, outOK, "", 7, 20, 30),
	}
	final := map[string]item{"k": {"b", 7}}
	watch := func(evs ...watchEvent) *watchLog {
		w := &watchLog{segments: [][]watchEvent{nil}, last: map[string]item{}}
		for _, ev := range evs {
			w.event(ev)
		}
		return w
	}
	for _, tc := range []struct {
		name  string
		w     *watchLog
		fails bool
	}{
		{"every change in order", watch(watchEvent{"ADDED", "k", "a", 5}, watchEvent{"MODIFIED", "k", "b", 7}), false},
		{"a lagging watch may fold a key's changes", watch(watchEvent{"ADDED", "k", "b", 7}), false},
		{"out of order", watch(watchEvent{"MODIFIED", "k", "b", 7}, watchEvent{"ADDED", "k", "a", 5}), true},
		{"twice", watch(watchEvent{"ADDED", "k", "a", 5}, watchEvent{"ADDED", "k", "a", 5}, watchEvent{"MODIFIED", "k", "b", 7}), true},
		{"misses the last change", watch(watchEvent{"ADDED", "k", "a", 5}), true},
		{"a value nobody wrote", watch(watchEvent{"ADDED", "k", "x", 5}, watchEvent{"MODIFIED", "k", "b", 7}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkWatches(ops, []*watchLog{tc.w}, final)
			if (len(got) > 0) != tc.fails {
				t.Fatalf("violations %v, want failure %t", got, tc.fails)
			}
		})
	}
}

func TestLostWrites(t *testing.T) {
	ops := []porcupine.Operation{
		op(opCreate, "k", "a", 0, outOK, "", 5, 0, 10),
		op(opUpdate, "k", "b", 5, outOK, "", 7, 20, 30),
	}
	if lost := lostWrites(ops, map[string]item{"k": {"b", 7}}); len(lost) != 0 {
		t.Fatalf("kept writes reported lost: %v", lost)
	}
	if lost := lostWrites(ops, map[string]item{"k": {"a", 5}}); len(lost) != 1 {
		t.Fatalf("a lost update not reported: %v", lost)
	}
	if lost := lostWrites(ops, map[string]item{}); len(lost) != 1 {
		t.Fatalf("a lost key not reported: %v", lost)
	}
	inFlight := append(ops, op(opDelete, "k", "", 0, outUnknown, "", 0, 40, never))
	if lost := lostWrites(inFlight, map[string]item{}); len(lost) != 0 {
		t.Fatalf("a write followed by a delete of unknown outcome reported lost: %v", lost)
	}
}
