package kinds

import (
	"slices"
	"strconv"
)

// MatchesNodeSelector reports whether node labels satisfy a pod's
// nodeSelector and required node affinity.
func MatchesNodeSelector(labels map[string]string, spec *PodSpec) bool {
	for k, v := range spec.NodeSelector {
		if labels[k] != v {
			return false
		}
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.Required == nil {
		return true
	}
	for _, term := range spec.Affinity.NodeAffinity.Required.Terms {
		if TermMatches(labels, term) {
			return true
		}
	}
	return false
}

// TermMatches evaluates one node selector term (an AND of expressions).
func TermMatches(labels map[string]string, term NodeSelectorTerm) bool {
	for _, e := range term.MatchExpressions {
		v, ok := labels[e.Key]
		switch e.Operator {
		case "In":
			if !ok || !slices.Contains(e.Values, v) {
				return false
			}
		case "NotIn":
			if ok && slices.Contains(e.Values, v) {
				return false
			}
		case "Exists":
			if !ok {
				return false
			}
		case "DoesNotExist":
			if ok {
				return false
			}
		case "Gt", "Lt":
			if !ok || len(e.Values) != 1 {
				return false
			}
			have, err1 := strconv.ParseInt(v, 10, 64)
			want, err2 := strconv.ParseInt(e.Values[0], 10, 64)
			if err1 != nil || err2 != nil || (e.Operator == "Gt" && have <= want) || (e.Operator == "Lt" && have >= want) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Tolerated reports whether any toleration covers the taint.
func Tolerated(t Taint, tols []Toleration) bool {
	for _, tol := range tols {
		if tol.Tolerates(t) {
			return true
		}
	}
	return false
}
