package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

const rbacAPI = "/apis/rbac.authorization.k8s.io/v1/"

func roleJSON(name, rules string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q},"rules":%s}`, name, rules)
}

func bindingJSON(name, kind, role, user string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":%q,"name":%q},"subjects":[{"kind":"User","name":%q}]}`,
		name, kind, role, user)
}

// Nobody grants a permission they do not hold: an admin of a namespace
// may hand out what admin holds there, and nothing more, unless it may
// "escalate" or "bind".
func TestEscalationRefused(t *testing.T) {
	base := startAPI(t, conn(t))
	asAdmin := func(method, path, body string) {
		t.Helper()
		r := call(t, method, base+path, "application/json", body)
		if r.code/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, r.code, r.body)
		}
	}
	for _, ns := range []string{"team", "other"} {
		asAdmin("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`)
	}
	asAdmin("POST", rbacAPI+"namespaces/team/rolebindings", bindingJSON("lead-admin", "ClusterRole", "admin", "lead"))
	// esc may write roles in team beyond what it holds; binder may bind
	// cluster-admin there, and nothing else.
	asAdmin("POST", rbacAPI+"clusterroles", roleJSON("role-escalator",
		`[{"verbs":["create","update","escalate"],"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"]}]`))
	asAdmin("POST", rbacAPI+"namespaces/team/rolebindings", bindingJSON("esc", "ClusterRole", "role-escalator", "esc"))
	asAdmin("POST", rbacAPI+"clusterroles", roleJSON("admin-binder",
		`[{"verbs":["create"],"apiGroups":["rbac.authorization.k8s.io"],"resources":["rolebindings"]},`+
			`{"verbs":["bind"],"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"resourceNames":["cluster-admin"]}]`))
	asAdmin("POST", rbacAPI+"namespaces/team/rolebindings", bindingJSON("binder", "ClusterRole", "admin-binder", "binder"))

	lead, esc, binder := certIdentity(t, "lead"), certIdentity(t, "esc"), certIdentity(t, "binder")
	podRules := `[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"]}]`
	nodeRules := `[{"verbs":["get"],"apiGroups":[""],"resources":["nodes"]}]`
	type attempt struct {
		what      string
		as        identity
		method    string
		path      string
		body      string
		code      int
		mentions  string // in the refusal's message
		dryRunned bool
	}
	attempts := []attempt{
		{"a role within what admin holds", lead, "POST", "namespaces/team/roles", roleJSON("pod-reader", podRules), 201, "", false},
		{"a role beyond it", lead, "POST", "namespaces/team/roles", roleJSON("node-reader", nodeRules), 403, "get nodes", true},
		{"a wildcard verb", lead, "POST", "namespaces/team/roles", roleJSON("pods-all", `[{"verbs":["*"],"apiGroups":[""],"resources":["pods"]}]`), 403, "* pods", true},
		{"a role in a namespace it does not administer", lead, "POST", "namespaces/other/roles", roleJSON("pod-reader", podRules), 403, "cannot create", true},
		{"binding edit", lead, "POST", "namespaces/team/rolebindings", bindingJSON("x-edit", "ClusterRole", "edit", "x"), 201, "", false},
		{"binding its own admin role", lead, "POST", "namespaces/team/rolebindings", bindingJSON("x-admin", "ClusterRole", "admin", "x"), 201, "", false},
		{"binding cluster-admin", lead, "POST", "namespaces/team/rolebindings", bindingJSON("x-root", "ClusterRole", "cluster-admin", "x"), 403, "cluster-admin", true},
		{"binding a role that does not exist", lead, "POST", "namespaces/team/rolebindings", bindingJSON("x-ghost", "ClusterRole", "ghost", "x"), 403, "does not exist", true},
		{"a cluster role binding", lead, "POST", "clusterrolebindings", bindingJSON("x-view", "ClusterRole", "view", "x"), 403, "cannot create", true},
		{"escalate lets a role exceed what is held", esc, "POST", "namespaces/team/roles", roleJSON("node-reader", nodeRules), 201, "", false},
		{"bind lets the named role be bound", binder, "POST", "namespaces/team/rolebindings", bindingJSON("y-root", "ClusterRole", "cluster-admin", "y"), 201, "", false},
		{"bind of another role is not given", binder, "POST", "namespaces/team/rolebindings", bindingJSON("y-view", "ClusterRole", "view", "y"), 403, "view", true},
	}
	// The bindings above reach the API's caches a moment after they are
	// written: wait until lead's first grant is accepted, as a dry run.
	poll.Until(t, "lead's admin binding in effect", 20*time.Second, func() bool {
		return callAs(t, lead.hc, "", "POST", base+rbacAPI+"namespaces/team/roles?dryRun=All", "application/json", roleJSON("probe", podRules)).code == 201 &&
			callAs(t, esc.hc, "", "POST", base+rbacAPI+"namespaces/team/roles?dryRun=All", "application/json", roleJSON("probe", nodeRules)).code == 201 &&
			callAs(t, binder.hc, "", "POST", base+rbacAPI+"namespaces/team/rolebindings?dryRun=All", "application/json", bindingJSON("probe", "ClusterRole", "cluster-admin", "y")).code == 201
	})
	for _, a := range attempts {
		t.Run(a.what, func(t *testing.T) {
			r := callAs(t, a.as.hc, "", a.method, base+rbacAPI+a.path, "application/json", a.body)
			if r.code != a.code || a.mentions != "" && !strings.Contains(r.status.Message, a.mentions) {
				t.Fatalf("%s as %s: %d %s, want %d mentioning %q", a.path, a.as.name, r.code, r.body, a.code, a.mentions)
			}
			if a.code == 403 && strings.HasSuffix(a.path, "roles") || strings.HasSuffix(a.path, "bindings") && a.code == 403 {
				if !strings.Contains(r.status.Message, "forbidden") {
					t.Fatalf("refusal does not say forbidden: %s", r.status.Message)
				}
			}
		})
	}
	// Nothing refused was stored.
	for _, a := range attempts {
		if a.code != 403 {
			continue
		}
		name := strings.Split(strings.Split(a.body, `"name":"`)[1], `"`)[0]
		if a.what == "escalate lets a role exceed what is held" || name == "node-reader" && strings.Contains(a.path, "team") {
			continue // stored by esc's own attempt
		}
		if r := call(t, "GET", base+rbacAPI+a.path+"/"+name, "", ""); r.code != 404 {
			t.Errorf("%s: refused, yet %s/%s answers %d", a.what, a.path, name, r.code)
		}
	}

	t.Run("roleRef is immutable", func(t *testing.T) {
		r := call(t, "PUT", base+rbacAPI+"namespaces/team/rolebindings/x-edit", "application/json", bindingJSON("x-edit", "ClusterRole", "view", "x"))
		mustCode(t, r, 422, "Invalid")
		if !strings.Contains(r.status.Message, "roleRef") {
			t.Fatalf("message does not name roleRef: %s", r.status.Message)
		}
	})
	t.Run("updating a role beyond what is held", func(t *testing.T) {
		cur := call(t, "GET", base+rbacAPI+"namespaces/team/roles/pod-reader", "", "")
		body := fmt.Sprintf(`{"metadata":{"name":"pod-reader","resourceVersion":%q},"rules":%s}`, cur.obj.Metadata.ResourceVersion, nodeRules)
		r := callAs(t, lead.hc, "", "PUT", base+rbacAPI+"namespaces/team/roles/pod-reader", "application/json", body)
		mustCode(t, r, 403, "Forbidden")
		after := call(t, "GET", base+rbacAPI+"namespaces/team/roles/pod-reader", "", "")
		if after.obj.Metadata.ResourceVersion != cur.obj.Metadata.ResourceVersion {
			t.Fatalf("refused update changed the role: %s", after.body)
		}
	})
}

// A ClusterRole labelled to aggregate into view extends view, and every
// binding of view with it, while it exists.
func TestAggregatedRoles(t *testing.T) {
	base := startAPI(t, conn(t))
	mustCode(t, call(t, "POST", base+rbacAPI+"clusterrolebindings", "application/json", bindingJSON("carol-view", "ClusterRole", "view", "carol")), 201, "")
	carol := certIdentity(t, "carol")
	nodes := func() int { return callAs(t, carol.hc, "", "GET", base+"/api/v1/nodes", "", "").code }
	poll.Until(t, "carol's view binding in effect", 20*time.Second, func() bool {
		return callAs(t, carol.hc, "", "GET", base+"/api/v1/pods", "", "").code == 200
	})
	if c := nodes(); c != 403 {
		t.Fatalf("view lists nodes before aggregation: %d", c)
	}
	mustCode(t, call(t, "POST", base+rbacAPI+"clusterroles", "application/json",
		`{"metadata":{"name":"nodes-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},`+
			`"rules":[{"verbs":["list"],"apiGroups":[""],"resources":["nodes"]}]}`), 201, "")
	poll.Until(t, "view to gather nodes-view", 20*time.Second, func() bool { return nodes() == 200 })
	mustCode(t, call(t, "DELETE", base+rbacAPI+"clusterroles/nodes-view", "", ""), 200, "")
	poll.Until(t, "view to lose nodes-view", 20*time.Second, func() bool { return nodes() == 403 })
}
