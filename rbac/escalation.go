package rbac

import (
	"slices"
	"strings"
)

// Covers says whether the owner's rules hold every permission of the
// requested ones, and which requested permissions they do not: the check
// that keeps anyone from granting what they do not hold. As in Kubernetes,
// each requested rule is broken down into single permissions (a verb on
// one resource of one group, one name where names are given, or a verb on
// one path), and a wildcard asked for is covered only by a wildcard.
func Covers(owner, requested []PolicyRule) (bool, []PolicyRule) {
	var missing []PolicyRule
	for _, want := range requested {
		for _, p := range breakdown(want) {
			if !coveredBy(owner, p) {
				missing = append(missing, p)
			}
		}
	}
	return len(missing) == 0, missing
}

func breakdown(r PolicyRule) []PolicyRule {
	var out []PolicyRule
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				if len(r.ResourceNames) == 0 {
					out = append(out, PolicyRule{Verbs: []string{v}, APIGroups: []string{g}, Resources: []string{res}})
					continue
				}
				for _, n := range r.ResourceNames {
					out = append(out, PolicyRule{Verbs: []string{v}, APIGroups: []string{g}, Resources: []string{res}, ResourceNames: []string{n}})
				}
			}
		}
	}
	for _, u := range r.NonResourceURLs {
		for _, v := range r.Verbs {
			out = append(out, PolicyRule{Verbs: []string{v}, NonResourceURLs: []string{u}})
		}
	}
	return out
}

// coveredBy: some owner rule holds the single permission p.
func coveredBy(owner []PolicyRule, p PolicyRule) bool {
	for _, o := range owner {
		if !has(o.Verbs, p.Verbs[0]) {
			continue
		}
		if len(p.NonResourceURLs) > 0 {
			if urlMatches(o.NonResourceURLs, p.NonResourceURLs[0]) {
				return true
			}
			continue
		}
		if !has(o.APIGroups, p.APIGroups[0]) || !resourceCovers(o.Resources, p.Resources[0]) {
			continue
		}
		if len(o.ResourceNames) == 0 || len(p.ResourceNames) > 0 && slices.Contains(o.ResourceNames, p.ResourceNames[0]) {
			return true
		}
	}
	return false
}

func resourceCovers(owner []string, res string) bool {
	if has(owner, res) {
		return true
	}
	if _, sub, ok := strings.Cut(res, "/"); ok {
		return has(owner, "*/"+sub)
	}
	return false
}
