package chaos

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"
)

// The store seen through the API, one key at a time, as a sequential
// specification for porcupine. Every write carries a value no other write
// has, so that a read names the write it saw. A write whose outcome the
// client never learned (a timeout, a lost connection, a 503 on a write)
// may or may not have happened, at any time after it was sent: it returns
// at "never" and the model allows both.

type opKind int

const (
	opCreate opKind = iota
	opUpdate        // compare-and-swap on the revision the client read
	opDelete        // unconditional
	opGet
)

func (k opKind) String() string {
	return [...]string{"create", "update", "delete", "get"}[k]
}

// kvInput is an operation on one key.
type kvInput struct {
	Kind  opKind
	Key   string
	Value string // create, update
	Rev   uint64 // update: the revision the client read
}

type outcome int

const (
	outOK outcome = iota
	outNotFound
	outExists   // create of a live key
	outConflict // update from a stale revision
	outUnknown  // the client does not know whether it happened
)

func (o outcome) String() string {
	return [...]string{"ok", "not found", "exists", "conflict", "unknown"}[o]
}

// kvOutput is what the client learned.
type kvOutput struct {
	Outcome outcome
	Value   string // get
	Rev     uint64 // the revision of a write, or of what a get read
}

// kvState is one key as the model knows it; Rev 0 means the revision of the
// current value is not known yet (written by a write of unknown outcome).
type kvState struct {
	Exists bool
	Value  string
	Rev    uint64
	// MinRev is the highest revision this key has had: revisions only grow.
	MinRev uint64
}

var kvModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []any { return []any{kvState{}} },
	Step: func(state, input, output any) []any {
		return stepKV(state.(kvState), input.(kvInput), output.(kvOutput))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		return fmt.Sprintf("%s(%s %s @%d) -> %s %s @%d", in.Kind, in.Key, in.Value, in.Rev, out.Outcome, out.Value, out.Rev)
	},
	DescribeState: func(state any) string {
		s := state.(kvState)
		if !s.Exists {
			return fmt.Sprintf("absent (≥%d)", s.MinRev)
		}
		return fmt.Sprintf("%s @%d", s.Value, s.Rev)
	},
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(kvInput).Key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

// stepKV returns every state the key can be in after the operation, given
// what the client saw; none when the client's view is impossible.
func stepKV(s kvState, in kvInput, out kvOutput) []any {
	written := func(rev uint64) kvState {
		return kvState{Exists: true, Value: in.Value, Rev: rev, MinRev: max(s.MinRev, rev)}
	}
	deleted := func(rev uint64) kvState { return kvState{MinRev: max(s.MinRev, rev)} }
	newer := func(rev uint64) bool { return rev > s.MinRev }
	switch in.Kind {
	case opCreate:
		switch out.Outcome {
		case outOK:
			return when(!s.Exists && newer(out.Rev), written(out.Rev))
		case outExists:
			return when(s.Exists, s)
		case outUnknown:
			if s.Exists {
				return []any{s}
			}
			return []any{s, written(0)}
		}
	case opUpdate:
		matches := s.Exists && (s.Rev == in.Rev || s.Rev == 0)
		switch out.Outcome {
		case outOK:
			return when(matches && newer(out.Rev) && out.Rev > in.Rev, written(out.Rev))
		case outConflict:
			// The revision is not current: another write, or a delete
			// that came between the update's read and its write.
			return when(!s.Exists || s.Rev != in.Rev || s.Rev == 0, s)
		case outNotFound:
			return when(!s.Exists, s)
		case outUnknown:
			if matches {
				return []any{s, written(0)}
			}
			return []any{s}
		}
	case opDelete:
		switch out.Outcome {
		case outOK:
			return when(s.Exists && (out.Rev == 0 || newer(out.Rev)), deleted(out.Rev))
		case outNotFound:
			return when(!s.Exists, s)
		case outUnknown:
			if s.Exists {
				return []any{s, deleted(0)}
			}
			return []any{s}
		}
	case opGet:
		switch out.Outcome {
		case outOK:
			ok := s.Exists && s.Value == out.Value && (s.Rev == out.Rev || s.Rev == 0 && newer(out.Rev))
			return when(ok, written2(s, out.Rev))
		case outNotFound:
			return when(!s.Exists, s)
		}
	}
	return nil
}

// written2 is s with its revision learned from a read.
func written2(s kvState, rev uint64) kvState {
	s.Rev, s.MinRev = rev, max(s.MinRev, rev)
	return s
}

func when(ok bool, s kvState) []any {
	if !ok {
		return nil
	}
	return []any{s}
}

// never is the return time of an operation whose outcome is unknown: it
// may take effect at any time after it was sent.
const never = math.MaxInt64
