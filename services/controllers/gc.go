package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// Finalizers that ask the garbage collector to act before an owner goes.
const (
	FinalizerOrphan     = object.FinalizerOrphan
	FinalizerForeground = object.FinalizerForeground
)

const (
	byOwnerUID  = "ownerUID"
	byOwnerName = "ownerName"
)

// garbageCollector deletes objects whose owners are all gone (background
// cascading deletion), strips owner references from dependents of an owner
// deleted with the orphan policy, and deletes the dependents of an owner
// deleted in the foreground before letting it go. Its keys are
// <resource>/<object key> over every built-in kind that has dependents.
type garbageCollector struct {
	bus  *bus.Conn
	reg  *schemas.Registry
	ctrl *reconcile.Controller
	log  *slog.Logger

	regMu sync.Mutex

	mu     sync.RWMutex
	infs   map[string]*reconcile.Informer // by resource; custom kinds come and go
	custom map[string]string              // ResourceDefinition name -> resource
}

func (g *garbageCollector) informer(resource string) *reconcile.Informer {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.infs[resource]
}

func (g *garbageCollector) informers() map[string]*reconcile.Informer {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return maps.Clone(g.infs)
}

func ownerUIDIndex(o *object.Object) []string {
	out := make([]string, 0, len(o.Metadata.OwnerReferences))
	for _, r := range o.Metadata.OwnerReferences {
		out = append(out, r.UID)
	}
	return out
}

func gcKey(resource, key string) string { return resource + "/" + key }

// watch installs the handlers that enqueue what may need collecting.
func (g *garbageCollector) watch(inf *reconcile.Informer) {
	resource := inf.Kind().Resource
	inf.OnChange(func(ch reconcile.Change) {
		if ch.New == nil {
			// The owner is gone: its dependents may be orphans now.
			for _, d := range g.dependents(ch.Old.Metadata.UID) {
				g.ctrl.Enqueue(gcKey(d.resource, d.obj.Key()), &ch, resource)
			}
			// An owner being deleted in the foreground waits for this.
			for _, r := range ch.Old.Metadata.OwnerReferences {
				if b, ok := g.resourceName(r); ok {
					g.ctrl.Enqueue(gcKey(b, object.Key(g.ownerNamespace(ch.Old, r), r.Name)), &ch, resource)
				}
			}
			return
		}
		o := ch.New
		if o.Metadata.Deleting() && (o.Metadata.HasFinalizer(FinalizerOrphan) || o.Metadata.HasFinalizer(FinalizerForeground)) {
			g.ctrl.Enqueue(gcKey(resource, o.Key()), &ch, resource)
			return
		}
		if len(o.Metadata.OwnerReferences) > 0 && g.ownerMissingFromCache(o) {
			g.ctrl.Enqueue(gcKey(resource, o.Key()), &ch, resource)
		}
	})
}

type dependent struct {
	resource string
	obj      *object.Object
}

func (g *garbageCollector) dependents(uid string) []dependent {
	var out []dependent
	for b, inf := range g.informers() {
		for _, o := range inf.ByIndex(byOwnerUID, uid) {
			out = append(out, dependent{b, o})
		}
	}
	return out
}

// resourceName resolves an owner reference's kind to its resource.
func (g *garbageCollector) resourceName(r object.OwnerReference) (string, bool) {
	if res, ok := g.reg.ForKind(r.APIVersion, r.Kind); ok {
		return res.GroupResource(), true
	}
	return "", false
}

func (g *garbageCollector) resourceOf(ctx context.Context, r object.OwnerReference) (*schemas.Resource, error) {
	if res, ok := g.reg.ForKind(r.APIVersion, r.Kind); ok {
		return res, nil
	}
	g.regMu.Lock()
	defer g.regMu.Unlock()
	defs, err := g.bus.Store(ctx, reconcile.KindOf(g.reg.MustLookup("homeostat.io", "resourcedefinitions")).StoreSpec())
	if err != nil {
		return nil, err
	}
	list, err := defs.List(ctx, bus.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range list.Items {
		_, _ = g.reg.Register(d)
	}
	if res, ok := g.reg.ForKind(r.APIVersion, r.Kind); ok {
		return res, nil
	}
	return nil, nil
}

func (g *garbageCollector) ownerNamespace(dep *object.Object, r object.OwnerReference) string {
	if res, ok := g.reg.ForKind(r.APIVersion, r.Kind); ok && !res.Namespaced {
		return ""
	}
	return dep.Metadata.Namespace
}

// ownerMissingFromCache is a cheap filter: true when some owner is not in
// a synced cache (the reconcile then checks the store itself).
func (g *garbageCollector) ownerMissingFromCache(o *object.Object) bool {
	for _, r := range o.Metadata.OwnerReferences {
		b, ok := g.resourceName(r)
		inf := g.informer(b)
		if !ok || inf == nil {
			return true
		}
		if !inf.Synced() {
			return false // the sweep after sync looks again
		}
		owner, found := inf.Get(object.Key(g.ownerNamespace(o, r), r.Name))
		if !found || owner.Metadata.UID != r.UID {
			return true
		}
	}
	return false
}

// sweep enqueues every object whose owners are missing: at start, once the
// caches are synced, and then every period.
func (g *garbageCollector) sweep(ctx context.Context, every time.Duration) {
	for {
		for b, inf := range g.informers() {
			for _, o := range inf.List() {
				if (len(o.Metadata.OwnerReferences) > 0 && g.ownerMissingFromCache(o)) ||
					(o.Metadata.Deleting() && (o.Metadata.HasFinalizer(FinalizerOrphan) || o.Metadata.HasFinalizer(FinalizerForeground))) {
					g.ctrl.EnqueueKey(gcKey(b, o.Key()))
				}
			}
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (g *garbageCollector) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	resource, key, ok := strings.Cut(req.Key, "/")
	inf := g.informer(resource)
	if !ok || inf == nil {
		return reconcile.Result{}, nil
	}
	o, found := inf.Get(key)
	if !found {
		return reconcile.Result{}, nil
	}
	if o.Metadata.Deleting() {
		return g.finalize(ctx, inf, o)
	}
	if len(o.Metadata.OwnerReferences) == 0 {
		return reconcile.Result{}, nil
	}
	for _, r := range o.Metadata.OwnerReferences {
		exists, err := g.ownerExists(ctx, o, r)
		if err != nil || exists {
			return reconcile.Result{}, err
		}
	}
	err := removeObject(ctx, g.bus, inf.Store(), o)
	if errors.Is(err, bus.ErrNotFound) || errors.Is(err, bus.ErrConflict) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// ownerExists checks the cache, then the store: a new owner may not be in
// this process's cache yet, and deleting its dependents would be wrong.
func (g *garbageCollector) ownerExists(ctx context.Context, dep *object.Object, r object.OwnerReference) (bool, error) {
	res, err := g.resourceOf(ctx, r)
	if err != nil {
		return false, err
	}
	if res == nil {
		return true, nil // a kind this process cannot see: leave it be
	}
	key := object.Key(g.ownerNamespace(dep, r), r.Name)
	if inf := g.informer(res.GroupResource()); inf != nil {
		if owner, ok := inf.Get(key); ok && owner.Metadata.UID == r.UID {
			return true, nil
		}
	}
	st, err := g.bus.Store(ctx, reconcile.KindOf(res).StoreSpec())
	if err != nil {
		return false, err
	}
	owner, err := st.Get(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return owner.Metadata.UID == r.UID, nil
}

// finalize carries out the orphan and foreground policies of an owner
// being deleted, then removes its finalizer so that the store lets it go.
func (g *garbageCollector) finalize(ctx context.Context, inf *reconcile.Informer, o *object.Object) (reconcile.Result, error) {
	deps := g.dependents(o.Metadata.UID)
	switch {
	case o.Metadata.HasFinalizer(FinalizerOrphan):
		for _, d := range deps {
			inf := g.informer(d.resource)
			if inf == nil {
				continue
			}
			if err := g.orphan(ctx, inf.Store(), d.obj, o.Metadata.UID); err != nil {
				return reconcile.Result{}, fmt.Errorf("orphaning %s: %w", d.obj.Key(), err)
			}
		}
		return reconcile.Result{}, g.dropFinalizer(ctx, inf, o, FinalizerOrphan)
	case o.Metadata.HasFinalizer(FinalizerForeground):
		for _, d := range deps {
			if d.obj.Metadata.Deleting() {
				continue
			}
			inf := g.informer(d.resource)
			if inf == nil {
				continue
			}
			st := inf.Store()
			if err := g.deleteForeground(ctx, st, d.obj); err != nil {
				return reconcile.Result{}, err
			}
		}
		if len(deps) > 0 {
			return reconcile.Result{RequeueAfter: 500 * time.Millisecond}, nil
		}
		return reconcile.Result{}, g.dropFinalizer(ctx, inf, o, FinalizerForeground)
	}
	return reconcile.Result{}, nil
}

// deleteForeground deletes a dependent, in the foreground too when it has
// dependents of its own, so that the whole tree goes bottom-up.
func (g *garbageCollector) deleteForeground(ctx context.Context, st *bus.Store, d *object.Object) error {
	if bus.Protected(st.Resource()) {
		return ignoreNotFound(g.bus.Collect(ctx, st.Resource(), d.Key(), d.Metadata.UID))
	}
	if len(g.dependents(d.Metadata.UID)) > 0 && !d.Metadata.HasFinalizer(FinalizerForeground) {
		cur, err := stored(ctx, st, d)
		if err != nil {
			return ignoreNotFound(err)
		}
		n := cur.Clone()
		n.Metadata.Finalizers = append(n.Metadata.Finalizers, FinalizerForeground)
		if d, err = st.Update(ctx, n, bus.UpdateOptions{Current: cur}); err != nil {
			return err
		}
	}
	_, _, err := st.Delete(ctx, d.Key(), bus.DeleteOptions{UID: d.Metadata.UID})
	if errors.Is(err, bus.ErrNotFound) {
		return nil
	}
	return err
}

// orphan takes the owner ownerUID from a dependent. A protected one (a
// token of a ServiceAccount being deleted) is removed instead: it grants
// access, and would outlive what it names.
func (g *garbageCollector) orphan(ctx context.Context, st *bus.Store, d *object.Object, ownerUID string) error {
	if bus.Protected(st.Resource()) {
		return ignoreNotFound(g.bus.Collect(ctx, st.Resource(), d.Key(), d.Metadata.UID))
	}
	return setOwner(ctx, st, d, nil, ownerUID)
}

func (g *garbageCollector) dropFinalizer(ctx context.Context, inf *reconcile.Informer, o *object.Object, f string) error {
	if st := inf.Store(); bus.Protected(st.Resource()) {
		return ignoreNotFound(g.bus.Finalize(ctx, st.Resource(), o.Key(), o.Metadata.UID, f))
	}
	cur, err := stored(ctx, inf.Store(), o)
	if err != nil {
		return ignoreNotFound(err)
	}
	n := cur.Clone()
	n.Metadata.RemoveFinalizer(f)
	_, err = inf.Store().Update(ctx, n, bus.UpdateOptions{Current: cur})
	return ignoreNotFound(err)
}
