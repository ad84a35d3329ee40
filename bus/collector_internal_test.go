package bus

import (
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
)

func TestMayCollect(t *testing.T) {
	now := time.Now()
	world := map[string]*object.Object{
		"namespaces/live":          {Metadata: object.Meta{Name: "live", UID: "ns1"}},
		"namespaces/going":         {Metadata: object.Meta{Name: "going", UID: "ns2", DeletionTimestamp: &now}},
		"serviceaccounts/live.bot": {Metadata: object.Meta{Namespace: "live", Name: "bot", UID: "sa1"}},
		"serviceaccounts/live.leaving": {Metadata: object.Meta{Namespace: "live", Name: "leaving", UID: "sa2",
			DeletionTimestamp: &now}},
	}
	lookup := func(resource, key string) (*object.Object, error) {
		if o, ok := world[resource+"/"+key]; ok {
			return o, nil
		}
		return nil, ErrNotFound
	}
	owned := func(sa, uid string) object.Meta {
		return object.Meta{Namespace: "live", Name: "t", OwnerReferences: []object.OwnerReference{{Kind: "ServiceAccount", Name: sa, UID: uid}}}
	}
	for _, c := range []struct {
		what     string
		req      collectRequest
		stored   object.Meta
		wantCode error
	}{
		{"role in a live namespace", collectRequest{Op: "delete", Resource: "roles.rbac.authorization.k8s.io"},
			object.Meta{Namespace: "live"}, ErrForbidden},
		{"role in a namespace being deleted", collectRequest{Op: "delete", Resource: "roles.rbac.authorization.k8s.io"},
			object.Meta{Namespace: "going"}, nil},
		{"role in a namespace that is gone", collectRequest{Op: "delete", Resource: "roles.rbac.authorization.k8s.io"},
			object.Meta{Namespace: "vanished"}, nil},
		{"cluster role", collectRequest{Op: "delete", Resource: "clusterroles.rbac.authorization.k8s.io"},
			object.Meta{Name: "cr"}, ErrForbidden},
		{"token of a live account", collectRequest{Op: "delete", Resource: "tokens.homeostat.io"}, owned("bot", "sa1"), ErrForbidden},
		{"token of an account made again", collectRequest{Op: "delete", Resource: "tokens.homeostat.io"}, owned("bot", "old"), nil},
		{"token of an account being deleted", collectRequest{Op: "delete", Resource: "tokens.homeostat.io"}, owned("leaving", "sa2"), nil},
		{"token of an account that is gone", collectRequest{Op: "delete", Resource: "tokens.homeostat.io"}, owned("nobody", "x"), nil},
		{"role owned by a gone account", collectRequest{Op: "delete", Resource: "roles.rbac.authorization.k8s.io"},
			owned("nobody", "x"), ErrForbidden},
		{"orphan finalizer of an object being deleted", collectRequest{Op: "finalize", Finalizer: object.FinalizerOrphan},
			object.Meta{Namespace: "live", DeletionTimestamp: &now}, nil},
		{"GC finalizer of an object not being deleted", collectRequest{Op: "finalize", Finalizer: object.FinalizerOrphan},
			object.Meta{Namespace: "live"}, ErrForbidden},
		{"another finalizer", collectRequest{Op: "finalize", Finalizer: "example.com/hold"},
			object.Meta{Namespace: "live", DeletionTimestamp: &now}, ErrForbidden},
		{"unknown operation", collectRequest{Op: "update"}, object.Meta{Namespace: "going"}, ErrInvalid},
	} {
		err := mayCollect(c.req, &object.Object{Metadata: c.stored}, lookup)
		if (c.wantCode == nil) != (err == nil) || (c.wantCode != nil && !errors.Is(err, c.wantCode)) {
			t.Errorf("%s: %v, want %v", c.what, err, c.wantCode)
		}
	}
}
