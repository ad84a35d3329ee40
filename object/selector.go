package object

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Selector is a parsed label selector in the Kubernetes string syntax:
// "a=b,c!=d,e in (x,y),f notin (z),g,!h". The zero Selector matches everything.
type Selector struct {
	reqs []requirement
}

type operator int

const (
	opEquals operator = iota
	opNotEquals
	opIn
	opNotIn
	opExists
	opNotExists
)

type requirement struct {
	key    string
	op     operator
	values []string
}

// ParseSelector parses a label selector; an empty string selects everything.
func ParseSelector(s string) (Selector, error) {
	var sel Selector
	for _, part := range splitTopLevel(s) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		r, err := parseRequirement(part)
		if err != nil {
			return Selector{}, err
		}
		sel.reqs = append(sel.reqs, r)
	}
	return sel, nil
}

// SelectorFromSet returns a selector requiring every label in set.
func SelectorFromSet(set map[string]string) Selector {
	var sel Selector
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sel.reqs = append(sel.reqs, requirement{key: k, op: opEquals, values: []string{set[k]}})
	}
	return sel
}

// splitTopLevel splits on commas that are not inside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseRequirement(p string) (requirement, error) {
	if strings.HasPrefix(p, "!") {
		k := strings.TrimSpace(p[1:])
		return requirement{key: k, op: opNotExists}, checkLabelKey(k)
	}
	if i := strings.Index(p, "!="); i >= 0 {
		return binary(p[:i], opNotEquals, p[i+2:])
	}
	if i := strings.Index(p, "=="); i >= 0 {
		return binary(p[:i], opEquals, p[i+2:])
	}
	if i := strings.Index(p, "="); i >= 0 {
		return binary(p[:i], opEquals, p[i+1:])
	}
	fields := strings.Fields(p)
	if len(fields) >= 2 && (fields[1] == "in" || fields[1] == "notin") {
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p[len(fields[0]):]), fields[1]))
		if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
			return requirement{}, fmt.Errorf("label selector %q: values of %q must be in parentheses", p, fields[1])
		}
		var vals []string
		for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
			v = strings.TrimSpace(v)
			if err := checkLabelValue(v); err != nil {
				return requirement{}, fmt.Errorf("label selector %q: %w", p, err)
			}
			vals = append(vals, v)
		}
		op := opIn
		if fields[1] == "notin" {
			op = opNotIn
		}
		return requirement{key: fields[0], op: op, values: vals}, checkLabelKey(fields[0])
	}
	k := strings.TrimSpace(p)
	if strings.ContainsAny(k, " ()") {
		return requirement{}, fmt.Errorf("label selector %q: expected key, key=value, key!=value, key in (...), key notin (...) or !key", p)
	}
	return requirement{key: k, op: opExists}, checkLabelKey(k)
}

func binary(k string, op operator, v string) (requirement, error) {
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if err := checkLabelKey(k); err != nil {
		return requirement{}, err
	}
	if err := checkLabelValue(v); err != nil {
		return requirement{}, err
	}
	return requirement{key: k, op: op, values: []string{v}}, nil
}

func checkLabelKey(k string) error {
	if k == "" {
		return fmt.Errorf("label selector: empty key")
	}
	if len(k) > 317 || strings.ContainsAny(k, " ,=!()") {
		return fmt.Errorf("label selector: invalid key %q", k)
	}
	return nil
}

func checkLabelValue(v string) error {
	if len(v) > 63 || strings.ContainsAny(v, " ,=!()") {
		return fmt.Errorf("invalid label value %q", v)
	}
	return nil
}

// Empty reports whether the selector matches everything.
func (s Selector) Empty() bool { return len(s.reqs) == 0 }

// Matches reports whether labels satisfy every requirement.
func (s Selector) Matches(labels map[string]string) bool {
	for _, r := range s.reqs {
		v, ok := labels[r.key]
		switch r.op {
		case opEquals:
			if !ok || v != r.values[0] {
				return false
			}
		case opNotEquals:
			if ok && v == r.values[0] {
				return false
			}
		case opIn:
			if !ok || !slices.Contains(r.values, v) {
				return false
			}
		case opNotIn:
			if ok && slices.Contains(r.values, v) {
				return false
			}
		case opExists:
			if !ok {
				return false
			}
		case opNotExists:
			if ok {
				return false
			}
		}
	}
	return true
}

// String renders the selector in its canonical string form.
func (s Selector) String() string {
	parts := make([]string, 0, len(s.reqs))
	for _, r := range s.reqs {
		switch r.op {
		case opEquals:
			parts = append(parts, r.key+"="+r.values[0])
		case opNotEquals:
			parts = append(parts, r.key+"!="+r.values[0])
		case opIn:
			parts = append(parts, r.key+" in ("+strings.Join(r.values, ",")+")")
		case opNotIn:
			parts = append(parts, r.key+" notin ("+strings.Join(r.values, ",")+")")
		case opExists:
			parts = append(parts, r.key)
		case opNotExists:
			parts = append(parts, "!"+r.key)
		}
	}
	return strings.Join(parts, ",")
}

// LabelSelector is the structured selector carried in specs
// (ReplicaSet.spec.selector and friends).
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one expression of a LabelSelector.
type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Requires reports whether every object the selector matches carries all
// of labels, with their values: each is among its matchLabels. (Its
// expressions only narrow what it matches, so they cannot fail that.)
func (ls *LabelSelector) Requires(labels map[string]string) bool {
	if ls == nil {
		return false
	}
	for k, v := range labels {
		if w, ok := ls.MatchLabels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Selector converts the structured form to a Selector. A nil LabelSelector
// matches nothing, as in Kubernetes; an empty one matches everything.
func (ls *LabelSelector) Selector() (Selector, error) {
	if ls == nil {
		return Selector{reqs: []requirement{{key: "", op: opExists}}}, nil
	}
	sel := SelectorFromSet(ls.MatchLabels)
	for _, e := range ls.MatchExpressions {
		r := requirement{key: e.Key, values: e.Values}
		switch e.Operator {
		case "In":
			r.op = opIn
		case "NotIn":
			r.op = opNotIn
		case "Exists":
			r.op = opExists
		case "DoesNotExist":
			r.op = opNotExists
		default:
			return Selector{}, fmt.Errorf("label selector: unknown operator %q for key %q", e.Operator, e.Key)
		}
		if (r.op == opIn || r.op == opNotIn) && len(r.values) == 0 {
			return Selector{}, fmt.Errorf("label selector: operator %s on key %q needs values", e.Operator, e.Key)
		}
		sel.reqs = append(sel.reqs, r)
	}
	return sel, nil
}
