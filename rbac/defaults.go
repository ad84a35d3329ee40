package rbac

import (
	"github.com/homeostat/homeostat/object"
)

// Labels and annotations of the default roles, as Kubernetes names them.
const (
	LabelBootstrapping   = "kubernetes.io/bootstrapping"
	AnnotationAutoupdate = "rbac.authorization.kubernetes.io/autoupdate"
	aggregateTo          = "rbac.authorization.k8s.io/aggregate-to-"
)

var (
	read  = []string{"get", "list", "watch"}
	write = []string{"create", "delete", "deletecollection", "patch", "update"}
	all   = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)

// Defaults are the ClusterRoles and ClusterRoleBindings every cluster
// has: cluster-admin for system:masters; admin, edit and view, aggregated
// from the system:aggregate-to-* roles (a custom kind joins them by
// carrying their labels, as in Kubernetes); discovery and the self
// reviews for every authenticated user.
func Defaults() (roles, bindings []*object.Object) {
	role := func(name string, labels map[string]string, rules []PolicyRule, agg string) *object.Object {
		o := &object.Object{APIVersion: Group + "/v1", Kind: "ClusterRole", Metadata: object.Meta{Name: name,
			Labels: map[string]string{LabelBootstrapping: "rbac-defaults"}, Annotations: map[string]string{AnnotationAutoupdate: "true"}}}
		for k, v := range labels {
			o.Metadata.Labels[k] = v
		}
		if agg != "" {
			_ = o.SetField("aggregationRule", AggregationRule{ClusterRoleSelectors: []object.LabelSelector{{MatchLabels: map[string]string{aggregateTo + agg: "true"}}}})
			rules = []PolicyRule{}
		}
		_ = o.SetField("rules", rules)
		return o
	}
	to := func(role string) map[string]string { return map[string]string{aggregateTo + role: "true"} }
	roles = []*object.Object{
		role("cluster-admin", nil, FullAuthority(), ""),
		role("admin", nil, nil, "admin"),
		role("edit", to("admin"), nil, "edit"),
		role("view", to("edit"), nil, "view"),
		role("system:aggregate-to-view", to("view"), []PolicyRule{
			{Verbs: read, APIGroups: []string{""}, Resources: []string{"pods", "pods/log", "pods/status", "events",
				"namespaces", "namespaces/status", "serviceaccounts", "configmaps", "services", "services/status"}},
			{Verbs: read, APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/status", "deployments/scale",
				"replicasets", "replicasets/status", "replicasets/scale", "daemonsets", "daemonsets/status"}},
			{Verbs: read, APIGroups: []string{"batch"}, Resources: []string{"jobs", "jobs/status"}},
			{Verbs: read, APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}},
			{Verbs: read, APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}},
			{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/reconcile", "*/raw", "*/history", "*/explain"}},
			{Verbs: []string{"get"}, APIGroups: []string{"homeostat.io"}, Resources: []string{"traces"}},
		}, ""),
		role("system:aggregate-to-edit", to("edit"), []PolicyRule{
			// Secrets are edit's, not view's: reading one is holding what it guards.
			{Verbs: write, APIGroups: []string{""}, Resources: []string{"pods", "serviceaccounts", "configmaps", "secrets", "services"}},
			{Verbs: read, APIGroups: []string{""}, Resources: []string{"secrets"}},
			{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts/token", "pods/portforward"}},
			// Read too: the pod must be found, and an older client sends a GET.
			{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/portforward"}},
			{Verbs: write, APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale", "replicasets",
				"replicasets/scale", "daemonsets"}},
			{Verbs: write, APIGroups: []string{"batch"}, Resources: []string{"jobs"}},
			{Verbs: []string{"get", "list", "watch", "delete"}, APIGroups: []string{"homeostat.io"}, Resources: []string{"tokens"}},
		}, ""),
		role("system:aggregate-to-admin", to("admin"), []PolicyRule{
			{Verbs: all, APIGroups: []string{Group}, Resources: []string{"roles", "rolebindings"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"localsubjectaccessreviews"}},
		}, ""),
		role("system:discovery", nil, []PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{
			"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/version", "/version/", "/openapi", "/openapi/*"}}}, ""),
		role("system:basic-user", nil, []PolicyRule{
			{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
		}, ""),
	}
	bind := func(name, role, group string) *object.Object {
		o := &object.Object{APIVersion: Group + "/v1", Kind: "ClusterRoleBinding", Metadata: object.Meta{Name: name,
			Labels: map[string]string{LabelBootstrapping: "rbac-defaults"}, Annotations: map[string]string{AnnotationAutoupdate: "true"}}}
		_ = o.SetField("roleRef", RoleRef{APIGroup: Group, Kind: "ClusterRole", Name: role})
		_ = o.SetField("subjects", []Subject{{Kind: KindGroup, APIGroup: Group, Name: group}})
		return o
	}
	bindings = []*object.Object{
		bind("cluster-admin", "cluster-admin", GroupMasters),
		bind("system:discovery", "system:discovery", "system:authenticated"),
		bind("system:basic-user", "system:basic-user", "system:authenticated"),
	}
	return roles, bindings
}
