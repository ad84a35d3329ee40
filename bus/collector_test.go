package bus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
)

// The controllers, which may not write RBAC objects or tokens, remove them
// through the API's collector, and it removes only garbage: what is in a
// namespace being deleted, a token whose ServiceAccount is gone, or a
// garbage collector's finalizer of an object being deleted.
func TestCollectorRemovesOnlyGarbage(t *testing.T) {
	ctx := context.Background()
	op, server := operatorBus(t)
	open := func(spec bus.StoreSpec) *bus.Store {
		st, err := server.Store(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	namespaces := open(bus.StoreSpec{Resource: "namespaces", Kind: "Namespace"})
	sas := open(bus.StoreSpec{Resource: "serviceaccounts", Kind: "ServiceAccount", Namespaced: true})
	roles := open(bus.StoreSpec{Resource: "roles.rbac.authorization.k8s.io", Kind: "Role", Namespaced: true})
	tokens := open(bus.StoreSpec{Resource: "tokens.homeostat.io", Kind: "Token", Namespaced: true})
	pods := open(bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	create := func(st *bus.Store, o *object.Object) *object.Object {
		t.Helper()
		got, err := st.Create(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	meta := func(ns, name string) object.Meta { return object.Meta{Namespace: ns, Name: name} }
	create(namespaces, &object.Object{APIVersion: "v1", Kind: "Namespace", Metadata: meta("", "live")})
	doomed := create(namespaces, &object.Object{APIVersion: "v1", Kind: "Namespace",
		Metadata: object.Meta{Name: "doomed", Finalizers: []string{object.FinalizerNamespace}}})
	if _, _, err := namespaces.Delete(ctx, "doomed", bus.DeleteOptions{UID: doomed.Metadata.UID}); err != nil {
		t.Fatal(err)
	}
	bot := create(sas, &object.Object{APIVersion: "v1", Kind: "ServiceAccount", Metadata: meta("live", "bot")})
	role := func(ns, name string, finalizers ...string) *object.Object {
		m := meta(ns, name)
		m.Finalizers = finalizers
		return create(roles, &object.Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Metadata: m})
	}
	token := func(name, sa, uid string) *object.Object {
		m := meta("live", name)
		m.OwnerReferences = []object.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: sa, UID: uid}}
		return create(tokens, &object.Object{APIVersion: "homeostat.io/v1", Kind: "Token", Metadata: m})
	}
	liveRole, doomedRole := role("live", "r"), role("doomed", "r")
	finalized := role("live", "f", object.FinalizerForeground)
	if _, _, err := roles.Delete(ctx, finalized.Key(), bus.DeleteOptions{UID: finalized.Metadata.UID}); err != nil {
		t.Fatal(err)
	}
	botToken, orphan := token("bot-1", "bot", bot.Metadata.UID), token("old-1", "old", "gone")
	pod := create(pods, &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: meta("doomed", "p")})

	creds, err := op.RoleCreds(bus.RoleControllers)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := bus.Connect(ctx, bus.Config{URLs: server.ClientURL(), Creds: creds, Name: "controllers"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctrl.Close)
	for _, c := range []struct {
		what     string
		ask      func() error
		store    *bus.Store
		key      string
		gone     bool
		wantCode error
	}{
		{"a Role of a live namespace", func() error { return ctrl.Collect(ctx, roles.Resource(), liveRole.Key(), liveRole.Metadata.UID) },
			roles, liveRole.Key(), false, bus.ErrForbidden},
		{"a Role of a namespace being deleted", func() error {
			return ctrl.Collect(ctx, roles.Resource(), doomedRole.Key(), doomedRole.Metadata.UID)
		}, roles, doomedRole.Key(), true, nil},
		{"a token of a live ServiceAccount", func() error {
			return ctrl.Collect(ctx, tokens.Resource(), botToken.Key(), botToken.Metadata.UID)
		}, tokens, botToken.Key(), false, bus.ErrForbidden},
		{"a token whose ServiceAccount is gone", func() error {
			return ctrl.Collect(ctx, tokens.Resource(), orphan.Key(), orphan.Metadata.UID)
		}, tokens, orphan.Key(), true, nil},
		{"a Role under another uid", func() error { return ctrl.Collect(ctx, roles.Resource(), liveRole.Key(), "other") },
			roles, liveRole.Key(), false, bus.ErrConflict},
		{"another's finalizer", func() error {
			return ctrl.Finalize(ctx, roles.Resource(), liveRole.Key(), liveRole.Metadata.UID, object.FinalizerForeground)
		}, roles, liveRole.Key(), false, bus.ErrForbidden},
		{"the collector's finalizer of a Role being deleted", func() error {
			return ctrl.Finalize(ctx, roles.Resource(), finalized.Key(), finalized.Metadata.UID, object.FinalizerForeground)
		}, roles, finalized.Key(), true, nil},
		{"an object of an unprotected kind", func() error { return ctrl.Collect(ctx, pods.Resource(), pod.Key(), pod.Metadata.UID) },
			pods, pod.Key(), false, bus.ErrForbidden},
	} {
		err := c.ask()
		if (c.wantCode == nil && err != nil) || (c.wantCode != nil && !errors.Is(err, c.wantCode)) {
			t.Errorf("%s: %v, want %v", c.what, err, c.wantCode)
		}
		_, gerr := c.store.Get(ctx, c.key)
		if gone := errors.Is(gerr, bus.ErrNotFound); gone != c.gone {
			t.Errorf("%s: gone %t (%v), want %t", c.what, gone, gerr, c.gone)
		}
	}
}
