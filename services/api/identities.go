package api

import (
	"context"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// identities are the caches that authentication reads on every request,
// kept current by watches so that a request costs no store read.
type identities struct {
	accounts, tokens *reconcile.Informer
}

// startIdentities makes the caches and runs them until ctx ends.
func (s *Service) startIdentities(ctx context.Context) error {
	inf := func(group, plural string) (*reconcile.Informer, error) {
		res := s.reg.MustLookup(group, plural)
		st, err := s.storeFor(ctx, res)
		if err != nil {
			return nil, err
		}
		i := reconcile.NewInformer(reconcile.KindOf(res), st, s.log)
		go i.Run(ctx)
		return i, nil
	}
	var (
		id  identities
		err error
	)
	if id.accounts, err = inf("", "serviceaccounts"); err != nil {
		return err
	}
	if id.tokens, err = inf("homeostat.io", "tokens"); err != nil {
		return err
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
