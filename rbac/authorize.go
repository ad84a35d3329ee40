package rbac

import (
	"fmt"
	"slices"
	"strings"
)

// GroupMasters may do anything, whatever the bindings say, as in
// Kubernetes, so that no deletion of a binding locks the cluster's
// administrators out.
const GroupMasters = "system:masters"

// Decision is an authorizer's answer, and why.
type Decision struct {
	Allowed bool
	// Reason names the binding and role that allowed it.
	Reason string
}

// Authorize decides a request.
func Authorize(src Source, a Attributes) Decision {
	if slices.Contains(a.Groups, GroupMasters) {
		return Decision{Allowed: true, Reason: "member of " + GroupMasters}
	}
	for _, b := range src.ClusterRoleBindings() {
		if !appliesTo(b, a.User, a.Groups) {
			continue
		}
		for _, r := range clusterRules(src, b.RoleRef.Name) {
			if r.allows(a) {
				return Decision{true, fmt.Sprintf("allowed by ClusterRoleBinding %q of ClusterRole %q", b.Name, b.RoleRef.Name)}
			}
		}
	}
	if a.Namespace == "" {
		return Decision{}
	}
	for _, b := range src.RoleBindings(a.Namespace) {
		if !appliesTo(b, a.User, a.Groups) {
			continue
		}
		for _, r := range bindingRules(src, b) {
			if r.allows(a) {
				return Decision{true, fmt.Sprintf("allowed by RoleBinding %q of %s %q in namespace %q", b.Name, b.RoleRef.Kind, b.RoleRef.Name, b.Namespace)}
			}
		}
	}
	return Decision{}
}

// RulesFor are the rules a user holds in a namespace (cluster-wide ones
// included), or at the cluster scope when namespace is empty.
func RulesFor(src Source, user string, groups []string, namespace string) []PolicyRule {
	if slices.Contains(groups, GroupMasters) {
		return FullAuthority()
	}
	var out []PolicyRule
	for _, b := range src.ClusterRoleBindings() {
		if appliesTo(b, user, groups) {
			out = append(out, clusterRules(src, b.RoleRef.Name)...)
		}
	}
	if namespace == "" {
		return out
	}
	for _, b := range src.RoleBindings(namespace) {
		if appliesTo(b, user, groups) {
			out = append(out, bindingRules(src, b)...)
		}
	}
	return out
}

// FullAuthority is every permission there is.
func FullAuthority() []PolicyRule {
	return []PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
}

// bindingRules are the rules of a RoleBinding's role: a Role of its
// namespace or a ClusterRole, granted within the namespace.
func bindingRules(src Source, b *Binding) []PolicyRule {
	if b.RoleRef.Kind == "Role" {
		r, ok := src.Role(b.Namespace, b.RoleRef.Name)
		if !ok {
			return nil
		}
		return r.Rules
	}
	return clusterRules(src, b.RoleRef.Name)
}

// clusterRules are a ClusterRole's rules; an aggregated one's are those of
// every ClusterRole its selectors match, themselves resolved the same way.
func clusterRules(src Source, name string) []PolicyRule {
	return resolve(src, name, map[string]bool{})
}

func resolve(src Source, name string, seen map[string]bool) []PolicyRule {
	if seen[name] {
		return nil
	}
	seen[name] = true
	r, ok := src.ClusterRole(name)
	if !ok {
		return nil
	}
	if r.Aggregation == nil {
		return r.Rules
	}
	var out []PolicyRule
	for _, other := range src.ClusterRoles() {
		if other.Name != name && r.Aggregation.matches(other.Labels) {
			out = append(out, resolve(src, other.Name, seen)...)
		}
	}
	return out
}

// AggregatedRules are the rules an aggregated ClusterRole gathers now.
func AggregatedRules(src Source, name string) []PolicyRule { return clusterRules(src, name) }

func (ag *AggregationRule) matches(labels map[string]string) bool {
	for _, ls := range ag.ClusterRoleSelectors {
		sel, err := ls.Selector()
		if err == nil && !sel.Empty() && sel.Matches(labels) {
			return true
		}
	}
	return false
}

// appliesTo says whether a binding names the user or one of its groups.
func appliesTo(b *Binding, user string, groups []string) bool {
	for _, s := range b.Subjects {
		switch s.Kind {
		case KindUser:
			if s.Name == user {
				return true
			}
		case KindGroup:
			if slices.Contains(groups, s.Name) {
				return true
			}
		case KindServiceAccount:
			ns := s.Namespace
			if ns == "" {
				ns = b.Namespace
			}
			if user == ServiceAccountUser(ns, s.Name) {
				return true
			}
		}
	}
	return false
}

// ServiceAccountUser is the user name of a ServiceAccount.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// allows says whether a rule permits a request.
func (r PolicyRule) allows(a Attributes) bool {
	if !has(r.Verbs, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return len(r.NonResourceURLs) > 0 && urlMatches(r.NonResourceURLs, a.Path)
	}
	if len(r.Resources) == 0 || !has(r.APIGroups, a.APIGroup) || !resourceMatches(r.Resources, a.Resource, a.Subresource) {
		return false
	}
	return len(r.ResourceNames) == 0 || a.Name != "" && slices.Contains(r.ResourceNames, a.Name)
}

// has: the list holds the value or the wildcard.
func has(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

func resourceMatches(rules []string, resource, sub string) bool {
	want := resource
	if sub != "" {
		want = resource + "/" + sub
	}
	for _, r := range rules {
		if r == "*" || r == want || sub != "" && r == "*/"+sub {
			return true
		}
	}
	return false
}

func urlMatches(rules []string, path string) bool {
	for _, u := range rules {
		if u == "*" || u == path || strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}

// Forbidden is the message Kubernetes gives a denied request.
func Forbidden(a Attributes) string {
	who := fmt.Sprintf("User %q", a.User)
	if !a.ResourceRequest {
		return fmt.Sprintf("forbidden: %s cannot %s path %q", who, a.Verb, a.Path)
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	subject := a.Resource
	if a.Name != "" {
		subject = fmt.Sprintf("%s %q", a.Resource, a.Name)
	}
	if a.APIGroup != "" {
		subject = strings.Replace(subject, a.Resource, a.Resource+"."+a.APIGroup, 1)
	}
	scope := "at the cluster scope"
	if a.Namespace != "" {
		scope = fmt.Sprintf("in the namespace %q", a.Namespace)
	}
	return fmt.Sprintf("%s is forbidden: %s cannot %s resource %q in API group %q %s", subject, who, a.Verb, res, a.APIGroup, scope)
}
