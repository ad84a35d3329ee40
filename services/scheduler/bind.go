package scheduler

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/tracing"
)

type bindJob struct {
	key   string
	node  string
	trace trace.SpanContext
}

// loop decides, one pod at a time, and hands binds to the binders.
func (s *Service) loop(ctx context.Context, binds chan<- bindJob) {
	for {
		key, sc, ok := s.queue.pop(ctx)
		if !ok {
			return
		}
		v, found := s.pods.Value(key)
		p, ok := v.(*kinds.Pod)
		if !found || !ok || s.cache.isAssumed(key) || !unbound(p) {
			continue
		}
		o := p.Object
		node, reasons, total := s.decide(key, p)
		if node == "" {
			s.unschedulable(ctx, o, sc, unschedulableMessage(total, reasons))
			s.queue.park(key)
			continue
		}
		select {
		case binds <- bindJob{key: key, node: node, trace: sc}:
		case <-ctx.Done():
			s.cache.forget(key)
			return
		}
	}
}

// decide filters and scores under the cache's lock, and assumes the pod on
// the chosen node before unlocking, so the next decision counts it.
func (s *Service) decide(key string, p *kinds.Pod) (string, map[string]int, int) {
	s.cache.mu.Lock()
	nodes := s.cache.snapshot()
	c := newCandidate(key, p, nodes)
	reasons := map[string]int{}
	best, bestScore, feasible := "", int64(-1), 0
	s.mu.Lock()
	start := s.offset
	s.offset++
	s.mu.Unlock()
	for i := range nodes {
		n := nodes[(start+i)%len(nodes)]
		if why := filter(c, n, nodes, s.cache); why != "" {
			reasons[why]++
			continue
		}
		feasible++
		if sc := score(c, n, nodes); sc > bestScore {
			best, bestScore = n.name, sc
		}
		if feasible >= s.cfg.MaxScored {
			break
		}
	}
	if best != "" {
		s.cache.assumeLocked(key, best, p)
	}
	s.cache.mu.Unlock()
	return best, reasons, len(nodes)
}

// binder binds by compare-and-swap on the pod: spec.nodeName and the
// PodScheduled condition in one write.
func (s *Service) binder(ctx context.Context, jobs <-chan bindJob) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-jobs:
			if err := s.bind(ctx, j); err != nil {
				s.cache.forget(j.key)
				if !errors.Is(err, errGone) {
					s.log.Warn("bind failed; retrying", "pod", j.key, "node", j.node, "err", err)
					s.queue.park(j.key)
				}
			}
		}
	}
}

var errGone = errors.New("pod gone or bound elsewhere")

func (s *Service) bind(ctx context.Context, j bindJob) error {
	ctx, span := tracing.Tracer().Start(bus.WithSpan(ctx, j.trace), "bind", trace.WithAttributes(
		attribute.String("pod", j.key), attribute.String("node", j.node)))
	defer span.End()
	cur, ok := s.pods.Get(j.key)
	for attempt := 0; attempt < 3; attempt++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !ok {
			return errGone
		}
		p, err := s.decoded(j.key, cur)
		if err != nil {
			return err
		}
		if !unbound(p) {
			return errGone
		}
		n := cur.Clone()
		if spec, ok := boundSpec(cur.Spec, j.node); ok {
			n.Spec = spec
		} else {
			// p may be the informer's: what changes is copied first.
			spec := *p.Spec
			spec.NodeName = j.node
			if err := n.SetSpec(spec); err != nil {
				return err
			}
		}
		status, err := s.statuses.status(p, time.Now().UTC().Truncate(time.Second))
		if err != nil {
			return err
		}
		n.Status = status
		bound, err := s.pods.Store().Update(ctx, n, bus.UpdateOptions{Current: cur})
		if err == nil {
			s.queue.remove(j.key)
			s.events.Event(ctx, bound, kinds.EventNormal, "Scheduled", "Successfully assigned %s/%s to %s",
				bound.Metadata.Namespace, bound.Metadata.Name, j.node)
			return nil
		}
		if !errors.Is(err, bus.ErrConflict) {
			span.SetStatus(codes.Error, err.Error())
			return err
		}
		// Someone else wrote the pod: look again at the latest version.
		cur, err = s.pods.Store().Get(ctx, j.key)
		ok = err == nil
		if err != nil && !errors.Is(err, bus.ErrNotFound) {
			return err
		}
	}
	return bus.ErrConflict
}

// decoded is cur decoded: the informer's decoding when it holds cur, which
// must not be changed.
func (s *Service) decoded(key string, cur *object.Object) (*kinds.Pod, error) {
	if v, ok := s.pods.Value(key); ok {
		if p, ok := v.(*kinds.Pod); ok && p.Object == cur {
			return p, nil
		}
	}
	return kinds.DecodePod(cur)
}

// unschedulable reports why, once per distinct message.
func (s *Service) unschedulable(ctx context.Context, o *object.Object, sc trace.SpanContext, msg string) {
	ctx = bus.WithSpan(ctx, sc)
	p, err := kinds.DecodePod(o)
	if err != nil {
		return
	}
	if c := object.FindCondition(p.Status.Conditions, kinds.PodScheduled); c != nil && c.Status == object.ConditionFalse && c.Message == msg {
		return
	}
	now := time.Now().UTC().Truncate(time.Second)
	object.SetCondition(&p.Status.Conditions, object.Condition{Type: kinds.PodScheduled, Status: object.ConditionFalse,
		Reason: "Unschedulable", Message: msg}, now)
	if p.Status.Phase == "" {
		p.Status.Phase = kinds.PodPending
	}
	n := o.Clone()
	if err := n.SetStatus(p.Status); err != nil {
		return
	}
	if _, err := s.pods.Store().Update(ctx, n, bus.UpdateOptions{Current: o}); err != nil && !errors.Is(err, bus.ErrConflict) && !errors.Is(err, bus.ErrNotFound) {
		s.log.Warn("recording an unschedulable pod", "pod", o.Key(), "err", err)
	}
	s.events.Event(ctx, o, kinds.EventWarning, "FailedScheduling", "%s", msg)
}
