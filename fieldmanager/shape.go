package fieldmanager

import (
	"encoding/json"
	"hash"
	"slices"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// What an update's managed fields depend on, in a member that differs,
// is less than its two values: structured-merge-diff compares the old
// object with the new one field by field and moves ownership of the
// fields added, removed and changed, so what counts is each field's
// place, whether each side has it, and whether the two are equal as it
// compares them (value.Equals: 1 and 1.0 are). Through objects, field
// names are the whole of a field's place; in a list the items' keys (or,
// in a set, the values) are, so a list that differs is taken whole. A
// place equal on both sides changes no field beneath it.
//
// A node's lease renewed (only its renewTime differs), a pod bound to a
// node (its nodeName added), a ReplicaSet's counts moved: each has one
// shape however its values go, where whole values made every key new.
//
// A value of one side only keeps its JSON kind (null, boolean, number,
// string): the field manager tells null from the rest, and a field of
// the wrong kind fails its validation. Two values that differ keep
// both kinds, so one class never mixes a change with a move to null.

// shapeOf writes to h the shape of a member that differs: live and next
// are its JSON on each side (nil where that side lacks it). False when
// either is not JSON. What it writes reads back one way: each place
// starts with a mark of its own and ends where its mark says.
func shapeOf(h hash.Hash, live, next []byte) bool {
	var l, n any
	hasL, hasN := len(live) > 0, len(next) > 0
	if hasL && utiljson.Unmarshal(live, &l) != nil {
		return false
	}
	if hasN && utiljson.Unmarshal(next, &n) != nil {
		return false
	}
	return writeShape(h, l, n, hasL, hasN)
}

// writeShape writes the shape of one place: l and n are its values on
// each side, hasL and hasN whether each side has one.
func writeShape(h hash.Hash, l, n any, hasL, hasN bool) bool {
	if hasL && hasN && value.Equals(value.NewValueInterface(l), value.NewValueInterface(n)) {
		// Equal, it changes no field beneath.
		h.Write([]byte{'='})
		return true
	}
	lm, lIsMap := l.(map[string]any)
	nm, nIsMap := n.(map[string]any)
	switch {
	case (lIsMap || !hasL) && (nIsMap || !hasN) && (lIsMap || nIsMap):
		h.Write([]byte{'{', flag(hasL), flag(hasN)})
		keys := make([]string, 0, len(lm)+len(nm))
		for k := range lm {
			keys = append(keys, k)
		}
		for k := range nm {
			if _, ok := lm[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			name, err := json.Marshal(k) // quoted: no name runs into the next
			if err != nil {
				return false
			}
			h.Write(name)
			lv, inL := lm[k]
			nv, inN := nm[k]
			if !writeShape(h, lv, nv, inL, inN) {
				return false
			}
		}
		h.Write([]byte{'}'})
		return true
	case hasL && hasN && scalar(l) && scalar(n):
		h.Write([]byte{'!', kindOf(l), kindOf(n)})
		return true
	case !hasL && scalar(n):
		h.Write([]byte{'+', kindOf(n)})
		return true
	case !hasN && scalar(l):
		h.Write([]byte{'-', kindOf(l)})
		return true
	}
	// Lists, and a place that is an object on one side only: whole.
	h.Write([]byte{'w', flag(hasL), flag(hasN)})
	for _, v := range []any{l, n} {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	return true
}

func flag(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}

func scalar(v any) bool {
	switch v.(type) {
	case nil, bool, int64, float64, string:
		return true
	}
	return false
}

// kindOf is a scalar's JSON kind, numbers told apart as the field manager
// reads them (int64 or float64).
func kindOf(v any) byte {
	switch v.(type) {
	case nil:
		return 'n'
	case bool:
		return 'b'
	case int64:
		return 'i'
	case float64:
		return 'f'
	default:
		return 's'
	}
}
