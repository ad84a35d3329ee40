package fieldmanager

import (
	"hash"
	"slices"
	"strconv"

	json "github.com/go-json-experiment/json/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// What an update's managed fields depend on, in a member that differs,
// is less than its two values: structured-merge-diff compares the old
// object with the new one field by field and moves ownership of the
// fields added, removed and changed, so what counts is each field's
// place, whether each side has it, and whether the two are equal as it
// compares them (value.Equals: 1 and 1.0 are). Through objects, field
// names are the whole of a field's place; in a list the field manager
// takes item by item, by keys (a status's conditions by type), the items'
// keys and their order on each side are, with each item's shape beneath
// (places.go says which lists those are, from the kind's type); any other
// list that differs (a set, an atomic list, one of no known type, or one
// whose items do not fit its keys) is taken whole. A place equal on both
// sides changes no field beneath it.
//
// A node's lease renewed (only its renewTime differs), a pod bound to a
// node (its nodeName added), a ReplicaSet's counts moved: each has one
// shape however its values go, where whole values made every key new.
//
// A value of one side only keeps its JSON kind (null, boolean, number,
// string): the field manager tells null from the rest, and a field of
// the wrong kind fails its validation. Two values that differ keep
// both kinds, so one class never mixes a change with a move to null.

// shapeOf writes to h the shape of a member that differs, at pl in its
// kind's type: live and next are its JSON on each side (nil where that
// side lacks it). False when either is not JSON. What it writes reads
// back one way: each place starts with a mark of its own and ends where
// its mark says.
func shapeOf(h hash.Hash, pl place, live, next []byte) bool {
	var l, n any
	hasL, hasN := len(live) > 0, len(next) > 0
	if hasL && utiljson.Unmarshal(live, &l) != nil {
		return false
	}
	if hasN && utiljson.Unmarshal(next, &n) != nil {
		return false
	}
	return writeShape(h, pl, l, n, hasL, hasN)
}

// writeShape writes the shape of one place, pl: l and n are its values
// on each side, hasL and hasN whether each side has one.
func writeShape(h hash.Hash, pl place, l, n any, hasL, hasN bool) bool {
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
		var name []byte
		for _, k := range keys {
			name = strconv.AppendQuote(name[:0], k) // quoted: no name runs into the next
			h.Write(name)
			lv, inL := lm[k]
			nv, inN := nm[k]
			if !writeShape(h, pl.field(k), lv, nv, inL, inN) {
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
	if keys, items, ok := pl.keyed(); ok {
		if done, ok := writeKeyed(h, keys, items, l, n, hasL, hasN); done {
			return ok
		}
	}
	// Other lists, and a place that is an object on one side only: whole.
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

// writeKeyed writes the shape of a list the field manager takes item by
// item by keys: the keys of each side's items in their order, then the
// shape of each item, by its keys. Done is false, with nothing written,
// when the list does not fit its keys (an item that is not an object,
// lacks a key or holds an object there, two items with the same keys): the
// field manager would refuse it or default a key, so it is taken whole.
func writeKeyed(h hash.Hash, keys []string, items place, l, n any, hasL, hasN bool) (done, ok bool) {
	ll, lIsList := l.([]any)
	nl, nIsList := n.([]any)
	if (hasL && !lIsList) || (hasN && !nIsList) {
		return false, false
	}
	lByKey, lOrder, ok1 := byKeys(keys, ll)
	nByKey, nOrder, ok2 := byKeys(keys, nl)
	if !ok1 || !ok2 {
		return false, false
	}
	h.Write([]byte{'[', flag(hasL), flag(hasN)})
	for _, order := range [][]string{lOrder, nOrder} {
		for _, k := range order {
			h.Write([]byte(k))
		}
		h.Write([]byte{'|'})
	}
	for _, k := range lOrder {
		nv, inN := nByKey[k]
		h.Write([]byte(k))
		if !writeShape(h, items, lByKey[k], nv, true, inN) {
			return true, false
		}
	}
	for _, k := range nOrder {
		if _, inL := lByKey[k]; inL {
			continue
		}
		h.Write([]byte(k))
		if !writeShape(h, items, nil, nByKey[k], false, true) {
			return true, false
		}
	}
	h.Write([]byte{']'})
	return true, true
}

// byKeys indexes a list's items by the values of their keys, each
// written as its kind and value (self-delimiting, and 1 told from 1.0 as
// the field manager reads them: appendScalar), in the list's order.
func byKeys(keys []string, list []any) (map[string]any, []string, bool) {
	byKey := make(map[string]any, len(list))
	order := make([]string, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		var b []byte
		for _, k := range keys {
			v, ok := m[k]
			if !ok || !scalar(v) || v == nil {
				return nil, nil, false
			}
			b = appendScalar(b, v)
		}
		k := string(b)
		if _, dup := byKey[k]; dup {
			return nil, nil, false
		}
		byKey[k] = item
		order = append(order, k)
	}
	return byKey, order, true
}

// appendScalar appends a scalar that is not null as its kind and its
// value, followed by a comma: the value read back one way, 1 told from
// 1.0 and "1" from 1, and the end of each plain.
func appendScalar(b []byte, v any) []byte {
	b = append(b, kindOf(v))
	switch v := v.(type) {
	case bool:
		b = strconv.AppendBool(b, v)
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case float64:
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	case string:
		b = strconv.AppendQuote(b, v)
	}
	return append(b, ',')
}
