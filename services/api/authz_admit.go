package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/rbac"
)

// admitRBAC refuses a Role, ClusterRole, RoleBinding or ClusterRoleBinding
// that would grant more than its writer holds, as Kubernetes does: a role's
// rules must be covered by the writer's own in its scope, unless the
// writer may "escalate" on that kind; a binding's role must be covered,
// unless the writer may "bind" it. cur is the object being replaced, nil
// on create.
func (s *Service) admitRBAC(ctx context.Context, ref *resourceRef, n, cur *object.Object) *apiError {
	if ref.res.Custom || ref.res.Group != rbac.Group {
		return nil
	}
	if e := roleRefUnchanged(ref, n, cur); e != nil {
		return e
	}
	u, _ := UserFrom(ctx)
	if u == nil || slices.Contains(u.Groups, GroupMasters) {
		return nil
	}
	id := s.caches()
	if !id.synced() {
		return unavailable("the API is starting: its authorization caches are not filled yet")
	}
	ns := n.Metadata.Namespace
	allowed := func(verb, resource, name string) bool {
		return rbac.Authorize(id, rbac.Attributes{User: u.Name, Groups: u.Groups, Verb: verb, ResourceRequest: true,
			APIGroup: rbac.Group, Resource: resource, Namespace: ns, Name: name}).Allowed
	}
	held := rbac.RulesFor(id, u.Name, u.Groups, ns)
	switch ref.res.Kind {
	case "Role", "ClusterRole":
		if allowed("escalate", ref.res.Plural, n.Metadata.Name) {
			return nil
		}
		role, err := rbac.RoleOf(n)
		if err != nil {
			return badRequest("%v", err)
		}
		want := role.Rules
		if role.Aggregation != nil {
			// What an aggregated role will hold is not known when it is
			// written: only full authority may write one.
			want = rbac.FullAuthority()
		}
		if ok, missing := rbac.Covers(held, want); !ok {
			return escalation(ref, n, u, fmt.Sprintf("it grants %s, which you do not hold", describeRules(missing)))
		}
	case "RoleBinding", "ClusterRoleBinding":
		b, err := rbac.BindingOf(n)
		if err != nil {
			return badRequest("%v", err)
		}
		plural := "clusterroles"
		if b.RoleRef.Kind == "Role" {
			plural = "roles"
		}
		if allowed("bind", plural, b.RoleRef.Name) {
			return nil
		}
		var rules []rbac.PolicyRule
		if b.RoleRef.Kind == "Role" {
			r, ok := id.Role(ns, b.RoleRef.Name)
			if !ok {
				return escalation(ref, n, u, fmt.Sprintf("Role %q does not exist in namespace %q, and you may not bind it", b.RoleRef.Name, ns))
			}
			rules = r.Rules
		} else {
			if _, ok := id.ClusterRole(b.RoleRef.Name); !ok {
				return escalation(ref, n, u, fmt.Sprintf("ClusterRole %q does not exist, and you may not bind it", b.RoleRef.Name))
			}
			rules = rbac.AggregatedRules(id, b.RoleRef.Name)
		}
		if ok, missing := rbac.Covers(held, rules); !ok {
			return escalation(ref, n, u, fmt.Sprintf("its %s %q grants %s, which you do not hold", b.RoleRef.Kind, b.RoleRef.Name, describeRules(missing)))
		}
	}
	return nil
}

// roleRefUnchanged refuses a binding update that changes its roleRef: a
// binding means one role, so that who may bind what stays checkable.
func roleRefUnchanged(ref *resourceRef, n, cur *object.Object) *apiError {
	if cur == nil || !strings.HasSuffix(ref.res.Kind, "Binding") {
		return nil
	}
	b, err := rbac.BindingOf(n)
	if err != nil {
		return badRequest("%v", err)
	}
	if old, err := rbac.BindingOf(cur); err == nil && old.RoleRef != b.RoleRef {
		return invalidField(ref, n.Metadata.Name, "roleRef", "immutable", "roleRef cannot change; delete the binding and make a new one")
	}
	return nil
}

func escalation(ref *resourceRef, n *object.Object, u *User, why string) *apiError {
	e := newError(http.StatusForbidden, object.ReasonForbidden, "%s %q is forbidden: User %q may not write it: %s (an attempt to grant extra privileges)",
		ref.groupResource(), n.Metadata.Name, u.Name, why)
	e.details = &object.StatusDetails{Name: n.Metadata.Name, Group: ref.group, Kind: ref.plural}
	return e
}

// describeRules lists permissions briefly, the first few of them.
func describeRules(rules []rbac.PolicyRule) string {
	var parts []string
	for i, r := range rules {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rules)-5))
			break
		}
		if len(r.NonResourceURLs) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", r.Verbs[0], r.NonResourceURLs[0]))
			continue
		}
		res := r.Resources[0]
		if r.APIGroups[0] != "" {
			res += "." + r.APIGroups[0]
		}
		if len(r.ResourceNames) > 0 {
			res += "/" + r.ResourceNames[0]
		}
		parts = append(parts, r.Verbs[0]+" "+res)
	}
	return strings.Join(parts, ", ")
}

// ensureDefaultRoles writes the default ClusterRoles and bindings that are
// missing, and puts back those marked for automatic update that differ.
func (s *Service) ensureDefaultRoles(ctx context.Context) error {
	roles, bindings := rbac.Defaults()
	for _, set := range []struct {
		plural string
		objs   []*object.Object
	}{{"clusterroles", roles}, {"clusterrolebindings", bindings}} {
		st, err := s.storeFor(ctx, s.reg.MustLookup(rbac.Group, set.plural))
		if err != nil {
			return err
		}
		for _, o := range set.objs {
			err := s.bus.UntilAvailable(ctx, set.plural+" "+o.Metadata.Name, func(ctx context.Context) error {
				return ensureDefault(ctx, st, o)
			})
			if err != nil {
				return fmt.Errorf("api: default %s %s: %w", set.plural, o.Metadata.Name, err)
			}
		}
	}
	return nil
}

func ensureDefault(ctx context.Context, st *bus.Store, want *object.Object) error {
	cur, err := st.Get(ctx, want.Key())
	if errors.Is(err, bus.ErrNotFound) {
		_, err = st.Create(ctx, want.Clone())
		if errors.Is(err, bus.ErrAlreadyExists) {
			return nil // another replica made it
		}
		return err
	}
	if err != nil || cur.Metadata.Annotations[rbac.AnnotationAutoupdate] != "true" {
		return err
	}
	n := cur.Clone()
	n.Fields = want.Clone().Fields
	n.Metadata.Labels = want.Metadata.Labels
	_, err = st.Update(ctx, n, bus.UpdateOptions{Current: cur})
	if errors.Is(err, bus.ErrConflict) {
		return nil // changed meanwhile: the next start looks again
	}
	return err
}
