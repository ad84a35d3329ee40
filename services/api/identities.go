package api

import (
	"context"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/rbac"
	"github.com/homeostat/homeostat/reconcile"
)

// identities are the caches that authentication and authorization read on
// every request, kept current by watches so that a request costs no store
// read.
type identities struct {
	accounts, tokens *reconcile.Informer
	// RBAC's kinds, each object decoded once per change (*rbac.Role,
	// *rbac.Binding), indexed by namespace.
	roles, clusterRoles, roleBindings, clusterRoleBindings *reconcile.Informer
}

const byNamespace = "namespace"

func namespaceIndex(o *object.Object) []string { return []string{o.Metadata.Namespace} }

// startIdentities makes the caches and runs them until ctx ends.
func (s *Service) startIdentities(ctx context.Context) error {
	inf := func(group, plural string, decode func(*object.Object) any) (*reconcile.Informer, error) {
		res := s.reg.MustLookup(group, plural)
		st, err := s.storeFor(ctx, res)
		if err != nil {
			return nil, err
		}
		i := reconcile.NewInformer(reconcile.KindOf(res), st, s.log)
		if decode != nil {
			i.SetDecoder(reconcile.DecodeEach(decode))
			i.AddIndex(byNamespace, namespaceIndex)
		}
		go i.Run(ctx)
		return i, nil
	}
	role := func(o *object.Object) any {
		r, err := rbac.RoleOf(o)
		if err != nil {
			return nil
		}
		return r
	}
	binding := func(o *object.Object) any {
		b, err := rbac.BindingOf(o)
		if err != nil {
			return nil
		}
		return b
	}
	var (
		id  identities
		err error
	)
	for _, c := range []struct {
		to            **reconcile.Informer
		group, plural string
		decode        func(*object.Object) any
	}{
		{&id.accounts, "", "serviceaccounts", nil},
		{&id.tokens, "homeostat.io", "tokens", nil},
		{&id.roles, rbac.Group, "roles", role},
		{&id.clusterRoles, rbac.Group, "clusterroles", role},
		{&id.roleBindings, rbac.Group, "rolebindings", binding},
		{&id.clusterRoleBindings, rbac.Group, "clusterrolebindings", binding},
	} {
		if *c.to, err = inf(c.group, c.plural, c.decode); err != nil {
			return err
		}
	}
	s.idents.Store(&id)
	return nil
}

// caches are the identity caches, empty until they are made.
func (s *Service) caches() *identities {
	if id := s.idents.Load(); id != nil {
		return id
	}
	return &identities{}
}

// synced says whether the RBAC caches hold their kinds' whole state.
func (id *identities) synced() bool {
	for _, i := range []*reconcile.Informer{id.roles, id.clusterRoles, id.roleBindings, id.clusterRoleBindings} {
		if i == nil || !i.Synced() {
			return false
		}
	}
	return true
}

// cachedGet reads an object from a cache, or from the store when the
// cache has not seen it (yet): a miss must not refuse what was just made.
func (s *Service) cachedGet(ctx context.Context, inf *reconcile.Informer, group, plural, key string) (*object.Object, error) {
	if inf != nil {
		if o, ok := inf.Get(key); ok {
			return o, nil
		}
	}
	st, err := s.storeFor(ctx, s.reg.MustLookup(group, plural))
	if err != nil {
		return nil, err
	}
	return st.Get(ctx, key)
}

// The caches are the authorizer's Source.
var _ rbac.Source = (*identities)(nil)

func (id *identities) ClusterRole(name string) (*rbac.Role, bool) {
	return valueOf[*rbac.Role](id.clusterRoles, name)
}
func (id *identities) Role(namespace, name string) (*rbac.Role, bool) {
	return valueOf[*rbac.Role](id.roles, object.Key(namespace, name))
}
func (id *identities) ClusterRoles() []*rbac.Role { return valuesOf[*rbac.Role](id.clusterRoles, "") }
func (id *identities) ClusterRoleBindings() []*rbac.Binding {
	return valuesOf[*rbac.Binding](id.clusterRoleBindings, "")
}
func (id *identities) RoleBindings(namespace string) []*rbac.Binding {
	return valuesOf[*rbac.Binding](id.roleBindings, namespace)
}

func valueOf[T any](inf *reconcile.Informer, key string) (T, bool) {
	var zero T
	if inf == nil {
		return zero, false
	}
	v, ok := inf.Value(key)
	t, isT := v.(T)
	if !ok || !isT {
		return zero, false
	}
	return t, true
}

func valuesOf[T any](inf *reconcile.Informer, namespace string) []T {
	if inf == nil {
		return nil
	}
	vals := inf.ValuesByIndex(byNamespace, namespace)
	out := make([]T, 0, len(vals))
	for _, v := range vals {
		if t, ok := v.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
