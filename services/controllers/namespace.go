package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// FinalizerNamespace holds a namespace until everything in it is gone.
const FinalizerNamespace = object.FinalizerNamespace

// namespaces empties a namespace that is being deleted — every object of
// every namespaced kind, custom ones included — then lets it go.
type namespaces struct {
	ns  *reconcile.Informer
	bus *bus.Conn
	reg *schemas.Registry
	log interface{ Warn(string, ...any) }
}

func (c *namespaces) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o, ok := c.ns.Get(req.Key)
	if !ok || !o.Metadata.Deleting() || !o.Metadata.HasFinalizer(FinalizerNamespace) {
		return reconcile.Result{}, nil
	}
	if err := updateStatus(ctx, c.ns.Store(), o, map[string]string{"phase": "Terminating"}); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.learnCustomKinds(ctx); err != nil {
		return reconcile.Result{}, err
	}
	left := 0
	for _, res := range c.reg.Resources() {
		if !res.Namespaced {
			continue
		}
		st, err := c.bus.Store(ctx, reconcile.KindOf(res).StoreSpec())
		if err != nil {
			return reconcile.Result{}, err
		}
		items, err := st.List(ctx, bus.ListOptions{Namespace: o.Metadata.Name})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("listing %s in %s: %w", res.GroupResource(), o.Metadata.Name, err)
		}
		for _, it := range items.Items {
			left++
			if it.Metadata.Deleting() {
				continue
			}
			// Pods go at once: their processes are stopped by the agent
			// when it sees them vanish.
			if err := removeObject(ctx, c.bus, st, it); err != nil && !errors.Is(err, bus.ErrNotFound) {
				return reconcile.Result{}, err
			}
		}
	}
	if left > 0 {
		return reconcile.Result{RequeueAfter: 500 * time.Millisecond}, nil
	}
	cur, err := c.ns.Store().Get(ctx, o.Key())
	if err != nil {
		return reconcile.Result{}, nil
	}
	n := cur.Clone()
	n.Metadata.RemoveFinalizer(FinalizerNamespace)
	_, err = c.ns.Store().Update(ctx, n, bus.UpdateOptions{Current: cur})
	if errors.Is(err, bus.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

func (c *namespaces) learnCustomKinds(ctx context.Context) error {
	defs, err := c.bus.Store(ctx, reconcile.KindOf(c.reg.MustLookup("homeostat.io", "resourcedefinitions")).StoreSpec())
	if err != nil {
		return err
	}
	list, err := defs.List(ctx, bus.ListOptions{})
	if err != nil {
		return err
	}
	for _, d := range list.Items {
		if _, err := c.reg.Register(d); err != nil {
			c.log.Warn("custom kind not known to the namespace controller", "definition", d.Metadata.Name, "err", err)
		}
	}
	return nil
}
