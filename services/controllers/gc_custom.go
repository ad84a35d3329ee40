package controllers

import (
	"context"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
)

// followCustomKinds runs an informer for every custom kind while its
// ResourceDefinition exists, so that the collector covers objects of custom
// kinds too (a Widget owned by a Deployment goes with it).
func (g *garbageCollector) followCustomKinds(ctx context.Context) {
	defs, err := g.bus.Store(ctx, reconcile.KindOf(g.reg.MustLookup("homeostat.io", "resourcedefinitions")).StoreSpec())
	if err != nil {
		g.log.Warn("garbage collector: no ResourceDefinitions", "err", err)
		return
	}
	running := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer func() {
		for _, cancel := range running {
			cancel()
		}
	}()
	for ctx.Err() == nil {
		ch, err := defs.Watch(ctx, bus.WatchOptions{})
		if err != nil {
			clock.Sleep(ctx, time.Second)
			continue
		}
		for ev := range ch {
			switch {
			case ev.Type == bus.Added || ev.Type == bus.Modified:
				if ev.Object.Metadata.Deleting() {
					g.stopKind(ev.Object.Metadata.Name, running)
					continue
				}
				g.regMu.Lock()
				res, err := g.reg.Register(ev.Object)
				g.regMu.Unlock()
				if err != nil {
					g.log.Warn("garbage collector: custom kind not followed", "definition", ev.Object.Metadata.Name, "err", err)
					continue
				}
				g.startKind(ctx, ev.Object.Metadata.Name, res, running, &wg)
			case ev.Type == bus.Deleted && ev.Object != nil:
				g.stopKind(ev.Object.Metadata.Name, running)
			}
		}
	}
}

func (g *garbageCollector) startKind(ctx context.Context, def string, res *schemas.Resource, running map[string]context.CancelFunc, wg *sync.WaitGroup) {
	if _, ok := running[def]; ok {
		return
	}
	k := reconcile.KindOf(res)
	st, err := g.bus.Store(ctx, k.StoreSpec())
	if err != nil {
		g.log.Warn("garbage collector: custom kind not followed", "kind", res.GroupResource(), "err", err)
		return
	}
	inf := reconcile.NewInformer(k, st, g.log)
	inf.AddIndex(byOwnerUID, ownerUIDIndex)
	g.watch(inf)
	g.mu.Lock()
	g.infs[k.Resource] = inf
	g.custom[def] = k.Resource
	g.mu.Unlock()
	ictx, cancel := context.WithCancel(ctx)
	running[def] = cancel
	wg.Add(1)
	go func() { defer wg.Done(); inf.Run(ictx) }()
}

func (g *garbageCollector) stopKind(def string, running map[string]context.CancelFunc) {
	cancel, ok := running[def]
	if !ok {
		return
	}
	cancel()
	delete(running, def)
	g.mu.Lock()
	delete(g.infs, g.custom[def])
	delete(g.custom, def)
	g.mu.Unlock()
}
