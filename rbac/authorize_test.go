package rbac

import (
	"slices"
	"testing"

	"github.com/homeostat/homeostat/object"
)

// source is a Source held in memory.
type source struct {
	clusterRoles        []*Role
	roles               []*Role
	clusterRoleBindings []*Binding
	roleBindings        []*Binding
}

func (s *source) ClusterRole(name string) (*Role, bool) {
	i := slices.IndexFunc(s.clusterRoles, func(r *Role) bool { return r.Name == name })
	if i < 0 {
		return nil, false
	}
	return s.clusterRoles[i], true
}
func (s *source) ClusterRoles() []*Role { return s.clusterRoles }
func (s *source) Role(namespace, name string) (*Role, bool) {
	i := slices.IndexFunc(s.roles, func(r *Role) bool { return r.Namespace == namespace && r.Name == name })
	if i < 0 {
		return nil, false
	}
	return s.roles[i], true
}
func (s *source) ClusterRoleBindings() []*Binding { return s.clusterRoleBindings }
func (s *source) RoleBindings(namespace string) []*Binding {
	var out []*Binding
	for _, b := range s.roleBindings {
		if b.Namespace == namespace {
			out = append(out, b)
		}
	}
	return out
}

// defaults is a source holding the default roles and bindings.
func defaults(t *testing.T) *source {
	t.Helper()
	roles, bindings := Defaults()
	s := &source{}
	for _, o := range roles {
		r, err := RoleOf(o)
		if err != nil {
			t.Fatal(err)
		}
		s.clusterRoles = append(s.clusterRoles, r)
	}
	for _, o := range bindings {
		b, err := BindingOf(o)
		if err != nil {
			t.Fatal(err)
		}
		s.clusterRoleBindings = append(s.clusterRoleBindings, b)
	}
	return s
}

func user(name string) Subject  { return Subject{Kind: KindUser, Name: name} }
func group(name string) Subject { return Subject{Kind: KindGroup, Name: name} }
func clusterRef(name string) RoleRef {
	return RoleRef{APIGroup: Group, Kind: "ClusterRole", Name: name}
}

func TestAuthorize(t *testing.T) {
	s := defaults(t)
	s.clusterRoles = append(s.clusterRoles,
		&Role{Name: "node-reader", Rules: []PolicyRule{{Verbs: read, APIGroups: []string{""}, Resources: []string{"nodes"}}}},
		// A custom kind joins view by its label, as in Kubernetes.
		&Role{Name: "widgets-view", Labels: map[string]string{aggregateTo + "view": "true"},
			Rules: []PolicyRule{{Verbs: read, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}}},
		&Role{Name: "loop-a", Aggregation: &AggregationRule{ClusterRoleSelectors: []object.LabelSelector{{MatchLabels: map[string]string{"loop": "b"}}}},
			Labels: map[string]string{"loop": "a"}},
		&Role{Name: "loop-b", Aggregation: &AggregationRule{ClusterRoleSelectors: []object.LabelSelector{{MatchLabels: map[string]string{"loop": "a"}}}},
			Labels: map[string]string{"loop": "b"}},
	)
	s.roles = append(s.roles, &Role{Namespace: "team", Name: "web-1-only", Rules: []PolicyRule{
		{Verbs: []string{"get", "update"}, APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/status"}, ResourceNames: []string{"web-1"}},
	}})
	s.clusterRoleBindings = append(s.clusterRoleBindings,
		&Binding{Name: "ops-nodes", Subjects: []Subject{group("ops")}, RoleRef: clusterRef("node-reader")},
		&Binding{Name: "carol-view", Subjects: []Subject{user("carol")}, RoleRef: clusterRef("view")},
		&Binding{Name: "loop", Subjects: []Subject{user("looper")}, RoleRef: clusterRef("loop-a")},
	)
	s.roleBindings = append(s.roleBindings,
		&Binding{Namespace: "team", Name: "alice-edit", Subjects: []Subject{user("alice")}, RoleRef: clusterRef("edit")},
		&Binding{Namespace: "team", Name: "dave-web-1", Subjects: []Subject{user("dave")},
			RoleRef: RoleRef{APIGroup: Group, Kind: "Role", Name: "web-1-only"}},
		&Binding{Namespace: "team", Name: "bot", Subjects: []Subject{{Kind: KindServiceAccount, Name: "bot"}}, RoleRef: clusterRef("view")},
		&Binding{Namespace: "team", Name: "missing-role", Subjects: []Subject{user("mallory")},
			RoleRef: RoleRef{APIGroup: Group, Kind: "Role", Name: "absent"}},
	)
	authn := []string{"system:authenticated"}
	res := func(u, verb, group, resource, ns, name string) Attributes {
		return Attributes{User: u, Groups: authn, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Namespace: ns, Name: name}
	}
	sub := func(a Attributes, sub string) Attributes { a.Subresource = sub; return a }
	for _, c := range []struct {
		name string
		a    Attributes
		want bool
	}{
		{"masters may do anything", Attributes{User: "root", Groups: []string{GroupMasters}, Verb: "delete", ResourceRequest: true, Resource: "nodes", Name: "n1"}, true},
		{"edit creates deployments in its namespace", res("alice", "create", "apps", "deployments", "team", ""), true},
		{"edit in one namespace only", res("alice", "create", "apps", "deployments", "other", ""), false},
		{"edit does not reach cluster scope", res("alice", "list", "", "nodes", "", ""), false},
		{"edit holds view's reads (aggregated twice)", res("alice", "watch", "", "pods", "team", ""), true},
		{"edit may not write roles", res("alice", "create", Group, "roles", "team", ""), false},
		{"edit reads pod logs", sub(res("alice", "get", "", "pods", "team", "p"), "log"), true},
		{"view reads everywhere from a cluster binding", res("carol", "list", "apps", "deployments", "any", ""), true},
		{"view may not write", res("carol", "delete", "", "pods", "any", "p"), false},
		{"view may not read secrets of another kind", res("carol", "get", "", "secrets", "any", "s"), false},
		{"a labelled custom role joins view", res("carol", "list", "example.com", "widgets", "any", ""), true},
		{"view's */reconcile wildcard covers every kind", sub(res("carol", "get", "apps", "deployments", "any", "d"), "reconcile"), true},
		{"*/reconcile is no wildcard for the resource", res("carol", "delete", "apps", "deployments", "any", "d"), false},
		{"resourceNames allow the named object", res("dave", "get", "apps", "deployments", "team", "web-1"), true},
		{"resourceNames refuse another", res("dave", "get", "apps", "deployments", "team", "web-2"), false},
		{"resourceNames refuse a list", res("dave", "list", "apps", "deployments", "team", ""), false},
		{"a subresource needs its own rule", sub(res("dave", "update", "apps", "deployments", "team", "web-1"), "status"), true},
		{"and the resource's rule is not it", sub(res("dave", "get", "apps", "deployments", "team", "web-1"), "scale"), false},
		{"a group binding", Attributes{User: "eve", Groups: []string{"ops"}, Verb: "get", ResourceRequest: true, Resource: "nodes", Name: "n1"}, true},
		{"not in the group", res("eve", "get", "", "nodes", "", "n1"), false},
		{"a ServiceAccount subject defaults to the binding's namespace", res(ServiceAccountUser("team", "bot"), "list", "", "pods", "team", ""), true},
		{"a ServiceAccount of another namespace is not it", res(ServiceAccountUser("other", "bot"), "list", "", "pods", "team", ""), false},
		{"a binding to a missing role grants nothing", res("mallory", "get", "", "pods", "team", "p"), false},
		{"aggregation cycles end", res("looper", "get", "", "pods", "team", "p"), false},
		{"discovery for the authenticated", Attributes{User: "x", Groups: authn, Verb: "get", Path: "/apis/apps/v1"}, true},
		{"no metrics for the authenticated", Attributes{User: "x", Groups: authn, Verb: "get", Path: "/metrics"}, false},
		{"self reviews for the authenticated", res("x", "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", ""), true},
		{"nothing for the unauthenticated", Attributes{User: "system:anonymous", Groups: []string{"system:unauthenticated"}, Verb: "get", Path: "/apis"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Authorize(s, c.a); got.Allowed != c.want {
				t.Fatalf("Authorize(%+v) = %+v, want allowed=%v", c.a, got, c.want)
			} else if got.Allowed && got.Reason == "" {
				t.Fatalf("allowed without a reason")
			}
		})
	}
}

func TestCovers(t *testing.T) {
	rule := func(verbs, groups, resources, names []string) PolicyRule {
		return PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	apps := []string{"apps"}
	deploy := []string{"deployments"}
	for _, c := range []struct {
		name             string
		owner, requested []PolicyRule
		want             bool
		missing          int
	}{
		{"the same rule", []PolicyRule{rule(read, apps, deploy, nil)}, []PolicyRule{rule(read, apps, deploy, nil)}, true, 0},
		{"a part of it", []PolicyRule{rule(all, apps, deploy, nil)}, []PolicyRule{rule([]string{"get"}, apps, deploy, nil)}, true, 0},
		{"one verb more", []PolicyRule{rule(read, apps, deploy, nil)}, []PolicyRule{rule([]string{"get", "delete"}, apps, deploy, nil)}, false, 1},
		{"split across owner rules", []PolicyRule{rule([]string{"get"}, apps, deploy, nil), rule([]string{"list"}, apps, deploy, nil)},
			[]PolicyRule{rule([]string{"get", "list"}, apps, deploy, nil)}, true, 0},
		{"a wildcard covers a name", []PolicyRule{rule([]string{"*"}, []string{"*"}, []string{"*"}, nil)}, []PolicyRule{rule(read, apps, deploy, nil)}, true, 0},
		{"a wildcard asked is covered only by one", []PolicyRule{rule(all, apps, deploy, nil)}, []PolicyRule{rule([]string{"*"}, apps, deploy, nil)}, false, 1},
		{"names narrow what is asked", []PolicyRule{rule(read, apps, deploy, []string{"a", "b"})}, []PolicyRule{rule([]string{"get"}, apps, deploy, []string{"a"})}, true, 0},
		{"a name not held", []PolicyRule{rule(read, apps, deploy, []string{"a"})}, []PolicyRule{rule([]string{"get"}, apps, deploy, []string{"a", "c"})}, false, 1},
		{"names held do not cover all names", []PolicyRule{rule(read, apps, deploy, []string{"a"})}, []PolicyRule{rule([]string{"get"}, apps, deploy, nil)}, false, 1},
		{"another group", []PolicyRule{rule(read, apps, deploy, nil)}, []PolicyRule{rule([]string{"get"}, []string{"batch"}, deploy, nil)}, false, 1},
		{"*/status covers a status subresource", []PolicyRule{rule([]string{"update"}, apps, []string{"*/status"}, nil)},
			[]PolicyRule{rule([]string{"update"}, apps, []string{"deployments/status"}, nil)}, true, 0},
		{"a path", []PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}}}, []PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/apps"}}}, true, 0},
		{"a path not held", []PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis"}}}, []PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}, false, 1},
		{"full authority covers all", FullAuthority(), FullAuthority(), true, 0},
		{"nothing asked", nil, nil, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, missing := Covers(c.owner, c.requested)
			if ok != c.want || len(missing) != c.missing {
				t.Fatalf("Covers = %v, missing %v; want %v with %d missing", ok, missing, c.want, c.missing)
			}
		})
	}
}

func TestForbidden(t *testing.T) {
	for _, c := range []struct {
		a    Attributes
		want string
	}{
		{Attributes{User: "bob", Verb: "create", ResourceRequest: true, APIGroup: "apps", Resource: "deployments", Namespace: "team"},
			`deployments.apps is forbidden: User "bob" cannot create resource "deployments" in API group "apps" in the namespace "team"`},
		{Attributes{User: "bob", Verb: "get", ResourceRequest: true, Resource: "nodes", Name: "n1"},
			`nodes "n1" is forbidden: User "bob" cannot get resource "nodes" in API group "" at the cluster scope`},
		{Attributes{User: "bob", Verb: "get", ResourceRequest: true, Resource: "pods", Subresource: "log", Namespace: "a", Name: "p"},
			`pods "p" is forbidden: User "bob" cannot get resource "pods/log" in API group "" in the namespace "a"`},
		{Attributes{User: "bob", Verb: "get", Path: "/metrics"}, `forbidden: User "bob" cannot get path "/metrics"`},
	} {
		if got := Forbidden(c.a); got != c.want {
			t.Errorf("Forbidden(%+v)\n got %s\nwant %s", c.a, got, c.want)
		}
	}
}
