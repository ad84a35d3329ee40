// Package rbac decides who may do what, with the shapes and semantics of
// Kubernetes' rbac.authorization.k8s.io/v1: Roles and ClusterRoles hold
// rules, RoleBindings and ClusterRoleBindings grant them to users, groups
// and ServiceAccounts, aggregated ClusterRoles gather the rules of the
// ClusterRoles their selectors match, and nobody may grant a permission
// they do not hold. It reads roles and bindings through Source and keeps
// no state of its own; the same code answers requests, access reviews and
// escalation checks.
package rbac

import (
	"fmt"

	"github.com/homeostat/homeostat/object"
)

// Group is the API group of the RBAC kinds.
const Group = "rbac.authorization.k8s.io"

// PolicyRule is one rule of a role.
type PolicyRule struct {
	Verbs           []string `json:"verbs"`
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// Subject is who a binding grants its role to.
type Subject struct {
	Kind      string `json:"kind"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Subject kinds.
const (
	KindUser           = "User"
	KindGroup          = "Group"
	KindServiceAccount = "ServiceAccount"
)

// RoleRef names the role a binding grants.
type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// AggregationRule gathers the rules of the ClusterRoles its selectors match.
type AggregationRule struct {
	ClusterRoleSelectors []object.LabelSelector `json:"clusterRoleSelectors,omitempty"`
}

// Role is a Role (Namespace set) or a ClusterRole.
type Role struct {
	Namespace, Name string
	Labels          map[string]string
	Rules           []PolicyRule
	Aggregation     *AggregationRule
}

// Binding is a RoleBinding (Namespace set) or a ClusterRoleBinding.
type Binding struct {
	Namespace, Name string
	Subjects        []Subject
	RoleRef         RoleRef
}

// RoleOf reads a Role or ClusterRole object.
func RoleOf(o *object.Object) (*Role, error) {
	r := &Role{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name, Labels: o.Metadata.Labels}
	if err := o.Field("rules", &r.Rules); err != nil {
		return nil, fmt.Errorf("%s %s: rules: %w", o.Kind, o.Key(), err)
	}
	if err := o.Field("aggregationRule", &r.Aggregation); err != nil {
		return nil, fmt.Errorf("%s %s: aggregationRule: %w", o.Kind, o.Key(), err)
	}
	return r, nil
}

// BindingOf reads a RoleBinding or ClusterRoleBinding object.
func BindingOf(o *object.Object) (*Binding, error) {
	b := &Binding{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}
	if err := o.Field("subjects", &b.Subjects); err != nil {
		return nil, fmt.Errorf("%s %s: subjects: %w", o.Kind, o.Key(), err)
	}
	if err := o.Field("roleRef", &b.RoleRef); err != nil {
		return nil, fmt.Errorf("%s %s: roleRef: %w", o.Kind, o.Key(), err)
	}
	return b, nil
}

// Source is where the authorizer reads roles and bindings: a cache kept
// current by watches, in the API.
type Source interface {
	ClusterRole(name string) (*Role, bool)
	ClusterRoles() []*Role
	Role(namespace, name string) (*Role, bool)
	ClusterRoleBindings() []*Binding
	RoleBindings(namespace string) []*Binding
}

// Attributes are what a request asks to do.
type Attributes struct {
	User   string
	Groups []string
	Verb   string
	// Resource requests name a resource; the others a Path.
	ResourceRequest bool
	APIGroup        string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	Path            string
}
