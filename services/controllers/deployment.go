package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// deployments roll ReplicaSets from one pod template to the next.
type deployments struct {
	deploys, rs *reconcile.Informer
	events      *reconcile.Recorder
	now         func() time.Time
}

// rsView is a ReplicaSet with its spec and status decoded.
type rsView struct {
	obj    *object.Object
	spec   kinds.ReplicaSetSpec
	status kinds.ReplicaSetStatus
}

func (r *rsView) replicas() int32 { return kinds.Int32(r.spec.Replicas, 0) }

func (r *rsView) revision() int64 { return kinds.Revision(&r.obj.Metadata) }

// deploymentState is what one reconcile works from.
type deploymentState struct {
	obj      *object.Object
	spec     kinds.DeploymentSpec
	status   kinds.DeploymentStatus
	hash     string
	newRS    *rsView
	old      []*rsView // oldest revision first
	replicas int32
	surge    int32
	unavail  int32
}

func (c *deployments) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o, ok := c.deploys.Get(req.Key)
	if !ok || o.Metadata.Deleting() {
		return reconcile.Result{}, nil
	}
	s, err := c.load(ctx, o)
	if err != nil {
		return reconcile.Result{}, err
	}
	if s.growing() {
		// Growing the new ReplicaSet counts the old ones' pods: count
		// them from a cache that has every write the store acknowledged
		// (this controller's own included), as it may lag.
		if err := c.catchUp(ctx); err != nil {
			return reconcile.Result{}, err
		}
		if s, err = c.load(ctx, o); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !s.spec.Paused {
		if err := c.rollout(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
		if err := c.cleanup(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
	} else if err := c.scalePaused(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	return c.writeStatus(ctx, s)
}

// load decodes a Deployment and the ReplicaSets it owns.
func (c *deployments) load(ctx context.Context, o *object.Object) (*deploymentState, error) {
	s := &deploymentState{obj: o}
	if err := o.DecodeSpec(&s.spec); err != nil {
		return nil, reconcile.Terminal(err)
	}
	_ = o.DecodeStatus(&s.status)
	sel, err := s.spec.Selector.Selector()
	if err != nil {
		return nil, reconcile.Terminal(err)
	}
	// Only its own ReplicaSets and orphans can be claimed: not every one
	// of the namespace, of which a thousand small Deployments have a
	// thousand.
	candidates := append(c.rs.ByIndex(byOwner, o.Metadata.UID), c.rs.ByIndex(byOrphan, o.Metadata.Namespace)...)
	owned, err := claimObjects(ctx, c.rs.Store(), o, sel, candidates)
	if err != nil {
		return nil, err
	}
	s.replicas = kinds.Int32(s.spec.Replicas, 1)
	s.surge, s.unavail = rollingBounds(s.spec, s.replicas)
	s.hash = templateHash(s.spec.Template)
	for _, r := range owned {
		v := &rsView{obj: r}
		if r.DecodeSpec(&v.spec) != nil {
			continue
		}
		_ = r.DecodeStatus(&v.status)
		if r.Metadata.Labels[LabelPodTemplateHash] == s.hash && !r.Metadata.Deleting() {
			s.newRS = v
		} else {
			s.old = append(s.old, v)
		}
	}
	sort.Slice(s.old, func(i, j int) bool { return s.old[i].revision() < s.old[j].revision() })
	return s, nil
}

// growing reports a rollout that may make the new ReplicaSet bigger while
// old ones exist.
func (s *deploymentState) growing() bool {
	return !s.spec.Paused && len(s.old) > 0 && (s.newRS == nil || s.newRS.replicas() < s.replicas)
}

// catchUpWait bounds the wait for the ReplicaSet cache to reach the store.
const catchUpWait = 2 * time.Second

// catchUp waits until the ReplicaSet cache reflects the store's latest
// revision, confirmed (see bus.Store.LastRevision).
func (c *deployments) catchUp(ctx context.Context) error {
	last, err := c.rs.Store().LastRevision(ctx)
	if err != nil {
		return err
	}
	if !c.rs.WaitForRevision(ctx, last, catchUpWait) {
		return fmt.Errorf("%w: the replicaset cache has not reached revision %d", bus.ErrUnavailable, last)
	}
	return nil
}

// rollingBounds resolves maxSurge (rounded up) and maxUnavailable (rounded
// down); both zero would stall, so maxUnavailable becomes 1.
func rollingBounds(spec kinds.DeploymentSpec, replicas int32) (surge, unavail int32) {
	if spec.Strategy.Type == "Recreate" {
		return 0, replicas
	}
	var ru kinds.RollingUpdateStrategy
	if spec.Strategy.RollingUpdate != nil {
		ru = *spec.Strategy.RollingUpdate
	}
	quarter := &kinds.IntOrString{IsString: true, Str: "25%"}
	if ru.MaxSurge == nil {
		ru.MaxSurge = quarter
	}
	if ru.MaxUnavailable == nil {
		ru.MaxUnavailable = quarter
	}
	surge = ru.MaxSurge.Scaled(replicas, true, 1)
	unavail = ru.MaxUnavailable.Scaled(replicas, false, 0)
	if surge == 0 && unavail == 0 {
		unavail = 1
	}
	return surge, unavail
}

func (c *deployments) rollout(ctx context.Context, s *deploymentState) error {
	maxRev := int64(0)
	for _, r := range s.old {
		maxRev = max(maxRev, r.revision())
	}
	if s.newRS == nil {
		created, err := c.createNewRS(ctx, s, maxRev+1)
		if err != nil || created == nil {
			return err
		}
		s.newRS = created
	} else if s.newRS.revision() <= maxRev {
		// Back to an earlier template (a rollback): it becomes the newest revision.
		if err := c.setRevision(ctx, s.newRS, maxRev+1); err != nil {
			return err
		}
	}
	if s.spec.Strategy.Type == "Recreate" {
		return c.recreate(ctx, s)
	}
	return c.rollingUpdate(ctx, s)
}

func (c *deployments) createNewRS(ctx context.Context, s *deploymentState, revision int64) (*rsView, error) {
	d := s.obj
	tmpl := s.spec.Template
	labels := map[string]string{}
	for k, v := range tmpl.Metadata.Labels {
		labels[k] = v
	}
	labels[LabelPodTemplateHash] = s.hash
	tmpl.Metadata.Labels = labels
	sel := object.LabelSelector{MatchLabels: map[string]string{LabelPodTemplateHash: s.hash}}
	if s.spec.Selector != nil {
		for k, v := range s.spec.Selector.MatchLabels {
			sel.MatchLabels[k] = v
		}
		sel.MatchExpressions = s.spec.Selector.MatchExpressions
	}
	first := c.firstSize(s)
	spec := kinds.ReplicaSetSpec{Replicas: &first, MinReadySeconds: s.spec.MinReadySeconds, Selector: &sel, Template: tmpl}
	ann := map[string]string{kinds.AnnotationRevision: strconv.FormatInt(revision, 10), AnnotationSlots: strconv.Itoa(int(first))}
	if cause := kinds.ChangeCause(&d.Metadata); cause != "" {
		ann[kinds.AnnotationChangeCause] = cause
	}
	rs := &object.Object{APIVersion: "apps/v1", Kind: "ReplicaSet", Metadata: object.Meta{
		Name: truncName(d.Metadata.Name, "-"+s.hash), Namespace: d.Metadata.Namespace, Labels: labels, Annotations: ann,
		OwnerReferences: []object.OwnerReference{object.NewControllerRef(d)},
	}}
	if err := rs.SetSpec(spec); err != nil {
		return nil, err
	}
	created, err := c.rs.Store().Create(ctx, rs)
	if errors.Is(err, bus.ErrAlreadyExists) {
		// A concurrent reconcile made it; the next pass sees it in the cache.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.events.Event(ctx, d, kinds.EventNormal, "ScalingReplicaSet", "Created new replica set %s (revision %d) at %d replicas", created.Metadata.Name, revision, first)
	return &rsView{obj: created, spec: spec}, nil
}

// firstSize is what a new ReplicaSet starts at, so that creating it is
// also its first scaling step: the surge room for RollingUpdate, all of it
// for Recreate once the old pods are gone.
func (c *deployments) firstSize(s *deploymentState) int32 {
	var oldPods int32
	for _, r := range s.old {
		oldPods += r.mayHave()
	}
	if s.spec.Strategy.Type == "Recreate" {
		if oldPods > 0 {
			return 0
		}
		return s.replicas
	}
	return surgeTo(s.replicas, s.surge, 0, 0, s.old)
}

// mayHave is how many live pods a ReplicaSet may have now: its spec, or
// more while pods it was scaled down from are still there, or every slot
// below its bound while a reconcile of an earlier spec may still add one
// (see AnnotationSettled).
func (r *rsView) mayHave() int32 { return boundOf(r.obj, r.replicas(), r.status.Replicas) }

// surgeTo is the size a new ReplicaSet of size n, which may have has pods,
// may grow to: up to the desired count, keeping every pod that may be live
// within replicas plus surge. It counts an old ReplicaSet's pods, not only
// its spec, so that pods the old one was just told to shed still count
// until they go: the bound holds for pods, not just for specs.
func surgeTo(replicas, surge, n, has int32, old []*rsView) int32 {
	live := max(n, has)
	for _, r := range old {
		live += r.mayHave()
	}
	return max(n, min(replicas, n+replicas+surge-live))
}

func (c *deployments) setRevision(ctx context.Context, r *rsView, rev int64) error {
	n := r.obj.Clone()
	if n.Metadata.Annotations == nil {
		n.Metadata.Annotations = map[string]string{}
	}
	n.Metadata.Annotations[kinds.AnnotationRevision] = strconv.FormatInt(rev, 10)
	delete(n.Metadata.Annotations, kinds.LegacyAnnotationRevision)
	updated, err := c.rs.Store().Update(ctx, n, bus.UpdateOptions{Current: r.obj})
	if err != nil {
		return err
	}
	r.obj = updated
	return nil
}

// scale sets a ReplicaSet's replicas by compare-and-swap.
func (c *deployments) scale(ctx context.Context, d *object.Object, r *rsView, n int32) error {
	if r.replicas() == n {
		return nil
	}
	from := r.replicas()
	spec := r.spec
	spec.Replicas = &n
	next := r.obj
	if n > slotsOf(next) {
		// Pods may be made up to n: raise the bound in the same write.
		next = withSlots(next, n, 0)
	} else {
		next = next.Clone()
	}
	if err := next.SetSpec(spec); err != nil {
		return err
	}
	updated, err := c.rs.Store().Update(ctx, next, bus.UpdateOptions{Current: r.obj})
	if err != nil {
		return fmt.Errorf("scaling %s to %d: %w", r.obj.Metadata.Name, n, err)
	}
	r.obj, r.spec = updated, spec
	verb := "up"
	if n < from {
		verb = "down"
	}
	c.events.Event(ctx, d, kinds.EventNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", verb, r.obj.Metadata.Name, from, n)
	return nil
}

// recreate: every old pod goes before any new one starts.
func (c *deployments) recreate(ctx context.Context, s *deploymentState) error {
	oldLeft := false
	for _, r := range s.old {
		if err := c.scale(ctx, s.obj, r, 0); err != nil {
			return err
		}
		if r.mayHave() > 0 {
			oldLeft = true
		}
	}
	if oldLeft {
		return nil
	}
	return c.scale(ctx, s.obj, s.newRS, s.replicas)
}

// rollingUpdate moves at most maxSurge above and maxUnavailable below the
// desired count, as Kubernetes does.
func (c *deployments) rollingUpdate(ctx context.Context, s *deploymentState) error {
	total := s.newRS.replicas()
	for _, r := range s.old {
		total += r.replicas()
	}
	// Scale up the new ReplicaSet within the surge.
	switch n := s.newRS.replicas(); {
	case n > s.replicas:
		if err := c.scale(ctx, s.obj, s.newRS, s.replicas); err != nil {
			return err
		}
		total -= n - s.replicas
	case n < s.replicas:
		up := surgeTo(s.replicas, s.surge, n, s.newRS.mayHave(), s.old)
		if err := c.scale(ctx, s.obj, s.newRS, up); err != nil {
			return err
		}
		total += up - n
	}
	for i, n := range scaleDownOld(s.replicas-s.unavail, total, s.newRS, s.old) {
		if err := c.scale(ctx, s.obj, s.old[i], n); err != nil {
			return err
		}
	}
	return nil
}

// scaleDownOld decides the size of each old ReplicaSet (oldest first) in
// a rolling update whose ReplicaSets' specs add up to total, as
// Kubernetes does: first the old pods not available, as many as leave
// minAvailable by the specs, then available ones down to minAvailable
// available. An old ReplicaSet's available pods count at most its spec:
// those it was told to shed are going, though its status may not say so
// yet, and counting them would let each reconcile before it does cut one
// more.
func scaleDownOld(minAvailable, total int32, newRS *rsView, old []*rsView) []int32 {
	out := make([]int32, len(old))
	for i, r := range old {
		out[i] = r.replicas()
	}
	maxDown := total - minAvailable - max(0, newRS.replicas()-newRS.status.AvailableReplicas)
	for i, r := range old {
		if maxDown <= 0 {
			break
		}
		cut := min(r.replicas()-availableOf(r), maxDown)
		if cut > 0 {
			out[i] -= cut
			maxDown -= cut
		}
	}
	available := newRS.status.AvailableReplicas
	for i, r := range old {
		available += min(availableOf(r), out[i])
	}
	down := available - minAvailable
	for i := range old {
		if down <= 0 {
			break
		}
		cut := min(out[i], down)
		out[i] -= cut
		down -= cut
	}
	return out
}

// availableOf is how many of a ReplicaSet's pods are available, at most
// its spec.
func availableOf(r *rsView) int32 { return max(0, min(r.status.AvailableReplicas, r.replicas())) }

// scalePaused follows spec.replicas while paused: a paused Deployment does
// not roll out, but it still scales. With one active ReplicaSet it takes the
// whole count; paused in mid-rollout, the change is shared in proportion,
// the remainder going to the newest.
func (c *deployments) scalePaused(ctx context.Context, s *deploymentState) error {
	var active []*rsView
	var total int32
	for _, r := range append(append([]*rsView(nil), s.old...), s.newRS) {
		if r != nil && r.replicas() > 0 {
			active = append(active, r)
			total += r.replicas()
		}
	}
	if len(active) == 0 {
		if s.newRS != nil {
			return c.scale(ctx, s.obj, s.newRS, s.replicas)
		}
		return nil
	}
	if total == s.replicas {
		return nil
	}
	left := s.replicas
	for i, r := range active {
		n := r.replicas() * s.replicas / total
		if i == len(active)-1 {
			n = left
		}
		left -= n
		if err := c.scale(ctx, s.obj, r, n); err != nil {
			return err
		}
	}
	return nil
}

// cleanup keeps revisionHistoryLimit scaled-down old ReplicaSets.
func (c *deployments) cleanup(ctx context.Context, s *deploymentState) error {
	limit := int(kinds.Int32(s.spec.RevisionHistoryLimit, 10))
	var idle []*rsView
	for _, r := range s.old {
		if r.replicas() == 0 && r.status.Replicas == 0 && !r.obj.Metadata.Deleting() {
			idle = append(idle, r)
		}
	}
	for i := 0; i < len(idle)-limit; i++ {
		_, _, err := c.rs.Store().Delete(ctx, idle[i].obj.Key(), bus.DeleteOptions{UID: idle[i].obj.Metadata.UID})
		if err != nil && !errors.Is(err, bus.ErrNotFound) {
			return err
		}
	}
	return nil
}
