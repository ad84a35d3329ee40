package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/clock"
)

// Options describe one run.
type Options struct {
	// Topology is "single" (homeostat up) or "cluster" (three NATS nodes
	// and every role in its own process).
	Topology string
	// Dir holds the run's data and every process's log.
	Dir string
	// Bin is the homeostat binary; NATS the nats-server binary (cluster).
	Bin, NATS string
	// Faults last this long; then the harness lets the system converge.
	Faults time.Duration
	// Clients and Watchers of the registers, over Keys keys; each client
	// pauses around Pace between operations.
	Clients, Watchers, Keys int
	Pace                    time.Duration
	// Corpora are directories of fuzz corpus files whose entries, and
	// mutations of them, are posted to the API as a fault.
	Corpora []string
	// Log reports progress.
	Log func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.Clients == 0 {
		o.Clients = 6
	}
	if o.Watchers == 0 {
		o.Watchers = 2
	}
	if o.Keys == 0 {
		o.Keys = 12
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// scaler is a topology that measures how soon a spec change is acted on
// after a NATS node is lost.
type scaler interface {
	prepareScale(ctx context.Context) error
	actTimes() []actTime
	actFailures() []string
}

// system is what a topology offers the harness.
type system interface {
	apis
	faults() []fault
	// node is where the rolled-out Deployment runs real processes.
	node() string
	// badValues writes values that are not objects straight into the store.
	badValues(ctx context.Context, n int) ([]string, error)
	close()
}

// Run runs the harness once and returns what it found. An error means the
// run itself could not be carried out; what the system got wrong is in the
// Report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts.defaults()
	sys, err := start(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer sys.close()
	r := &run{opts: opts, sys: sys, h: newHistory(),
		rep: &Report{Topology: opts.Topology, FaultTime: opts.Faults, Faults: map[string]int{}}}
	defer r.stop()
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	r.startLoad(ctx)
	if err := r.breakIt(ctx); err != nil {
		return nil, err
	}
	if err := r.converge(ctx); err != nil {
		return nil, err
	}
	return r.finish(ctx)
}

// run is one run's state, phase by phase.
type run struct {
	opts    Options
	sys     system
	rep     *Report
	h       *history
	web     *rollout
	load    *kvLoad
	watches []*watchLog
	fz      *fuzzer

	// The load (clients, rollouts, pod checks) stops once the system has
	// converged; rollouts stop with the faults, so that convergence is
	// measured from a fixed target; watchers outlive the load until they
	// have caught up with the final state.
	stopLoad, stopRolls, stopWatches context.CancelFunc
	loaders, watchers                sync.WaitGroup
}

// prepare defines the kinds, rolls out the Deployment and waits until it
// runs, before anything breaks.
func (r *run) prepare(ctx context.Context) error {
	if err := setup(ctx, r.sys); err != nil {
		return err
	}
	r.opts.Log("set up; rolling a Deployment and starting %d clients and %d watchers", r.opts.Clients, r.opts.Watchers)
	r.web = &rollout{name: "web", replicas: 4, surge: 1, selector: map[string]string{"kubernetes.io/hostname": r.sys.node()},
		command: []string{"sleep", "3600"}}
	if err := r.web.apply(ctx, r.sys, 1); err != nil {
		return err
	}
	if _, err := r.web.waitConverged(ctx, r.sys, 2*time.Minute); err != nil {
		return fmt.Errorf("before any fault: %w", err)
	}
	if s, ok := r.sys.(scaler); ok {
		if err := s.prepareScale(ctx); err != nil {
			return err
		}
	}
	if len(r.opts.Corpora) > 0 {
		bodies, err := readCorpora(r.opts.Corpora)
		if err != nil {
			return err
		}
		r.fz = &fuzzer{bodies: bodies}
	}
	return nil
}

func (r *run) startLoad(ctx context.Context) {
	r.load = newKVLoad(r.h, r.sys, r.opts.Keys)
	watchCtx, stopWatches := context.WithCancel(ctx)
	loadCtx, stopLoad := context.WithCancel(ctx)
	rollCtx, stopRolls := context.WithCancel(loadCtx)
	r.stopWatches, r.stopLoad, r.stopRolls = stopWatches, stopLoad, stopRolls
	r.watches = make([]*watchLog, r.opts.Watchers)
	for i := range r.watches {
		r.watches[i] = r.h.newWatch()
		r.watchers.Go(func() { r.load.watch(watchCtx, i, r.watches[i]) })
	}
	r.loaders.Go(func() { r.web.roll(rollCtx, r.sys, 4*time.Second) })
	r.loaders.Go(func() { r.load.run(loadCtx, r.opts.Clients, r.opts.Pace) })
	r.loaders.Go(func() { r.web.watchPods(loadCtx, r.sys) })
	r.loaders.Go(func() { r.web.scanSlots(loadCtx, r.sys.node(), 250*time.Millisecond) })
}

// breakIt injects faults for the fault time.
func (r *run) breakIt(ctx context.Context) error {
	faults := r.sys.faults()
	if r.fz != nil {
		faults = append(faults, fault{name: "fuzzed bodies posted to the API", inject: func(ctx context.Context) error {
			r.fz.post(ctx, r.sys, 30)
			return nil
		}})
	}
	r.opts.Log("injecting faults for %s", r.opts.Faults)
	return inject(ctx, r.sys, faults, r.opts, r.rep)
}

// converge ends the faults with the topology's worst one and a rollout
// started right after it: how long the rollout takes is the convergence
// time.
func (r *run) converge(ctx context.Context) error {
	r.stopRolls()
	last := r.sys.faults()[0]
	r.opts.Log("last fault: %s, then a rollout", last.name)
	if err := last.inject(ctx); err != nil {
		return fmt.Errorf("chaos: %s: %w", last.name, err)
	}
	r.rep.Faults[last.name]++
	began := time.Now()
	if last.heal != nil {
		if err := last.heal(ctx); err != nil {
			return fmt.Errorf("chaos: healing %s: %w", last.name, err)
		}
	}
	if err := r.web.rollOnce(ctx, r.sys); err != nil {
		return err
	}
	r.opts.Log("faults over; letting the system converge")
	if _, err := r.web.waitConverged(ctx, r.sys, 3*time.Minute); err != nil {
		r.rep.Stuck = append(r.rep.Stuck, err.Error())
	}
	r.rep.Converge = time.Since(began)
	return nil
}

// finish stops the load, reads the final state, lets the watchers catch
// up, and checks the history.
func (r *run) finish(ctx context.Context) (*Report, error) {
	r.stopLoad()
	r.loaders.Wait()
	final, err := finalState(ctx, r.sys, r.h, r.load.keys)
	if err != nil {
		return nil, err
	}
	// A write whose client gave up (its outcome unknown) may still land
	// after the final reads: the watchers are held to the store as it is
	// once they agree with it, read again until then.
	settled := waitWatchers(ctx, r.watches, func() (map[string]item, error) {
		return readState(ctx, r.sys, r.load.keys)
	}, final, time.Minute)
	r.stopWatches()
	r.watchers.Wait()
	r.rep.collect(r.h, r.load, r.web, r.watches, final, settled, r.opts.Dir)
	if len(r.rep.OverSurge) > 0 && r.opts.Dir != "" {
		r.web.writeEvents(ctx, r.sys, r.opts.Dir)
	}
	if s, ok := r.sys.(scaler); ok {
		r.rep.ActAfterNodeLoss, r.rep.Stuck = s.actTimes(), append(r.rep.Stuck, s.actFailures()...)
	}
	if r.fz != nil {
		r.fz.mu.Lock()
		r.rep.Fuzzed, r.rep.FuzzFailures = r.fz.sent, r.fz.failures
		r.fz.mu.Unlock()
	}
	return r.rep, nil
}

// stop ends whatever still runs.
func (r *run) stop() {
	for _, cancel := range []context.CancelFunc{r.stopRolls, r.stopLoad, r.stopWatches} {
		if cancel != nil {
			cancel()
		}
	}
	r.loaders.Wait()
	r.watchers.Wait()
}

func start(ctx context.Context, opts Options) (system, error) {
	switch opts.Topology {
	case "single":
		return startSingle(ctx, opts.Dir, opts.Bin)
	case "cluster":
		return startCluster(ctx, opts.Dir, opts.Bin, opts.NATS)
	}
	return nil, fmt.Errorf("chaos: unknown topology %q (single or cluster)", opts.Topology)
}

// setup defines the registers and makes the namespace, retrying while the
// system starts.
func setup(ctx context.Context, sys system) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := trySetup(ctx, sys.client(0))
		if err == nil {
			return nil
		}
		if code := client.StatusCode(err); code >= 400 && code < 500 || time.Now().After(deadline) || !clock.Sleep(ctx, 200*time.Millisecond) {
			return fmt.Errorf("chaos: setup: %w", err)
		}
	}
}

func trySetup(ctx context.Context, c *client.Client) error {
	defs := client.Resource{Group: "homeostat.io", Version: "v1", Kind: "ResourceDefinition", Plural: "resourcedefinitions"}
	if _, _, err := c.Apply(ctx, defs, "", []byte(registerDef)); err != nil {
		return err
	}
	nss := client.Resource{Version: "v1", Kind: "Namespace", Plural: "namespaces"}
	for _, ns := range []string{namespace, fuzzNamespace} {
		if _, _, err := c.Apply(ctx, nss, "", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`)); err != nil {
			return err
		}
	}
	_, err := c.List(ctx, registers, namespace, client.ListOptions{})
	return err
}

// inject breaks the system again and again for opts.Faults: a fault, a
// while broken, mended, a while whole.
func inject(ctx context.Context, sys system, faults []fault, opts Options, rep *Report) error {
	end := time.Now().Add(opts.Faults)
	for time.Now().Before(end) {
		f := faults[rand.IntN(len(faults))]
		opts.Log("fault: %s", f.name)
		if err := f.inject(ctx); err != nil {
			return fmt.Errorf("chaos: %s: %w", f.name, err)
		}
		rep.Faults[f.name]++
		clock.Sleep(ctx, time.Duration(500+rand.IntN(2500))*time.Millisecond)
		if f.heal != nil {
			if err := f.heal(ctx); err != nil {
				return fmt.Errorf("chaos: healing %s: %w", f.name, err)
			}
		}
		if bad, err := sys.badValues(ctx, 1); err == nil {
			rep.BadValues = append(rep.BadValues, bad...)
		}
		clock.Sleep(ctx, time.Duration(500+rand.IntN(1500))*time.Millisecond)
	}
	return ctx.Err()
}

// finalState reads every key once the faults are over, retrying until the
// system answers, and records the reads in the history: they are the last
// word on what the store kept.
func finalState(ctx context.Context, sys system, h *history, keys []string) (map[string]item, error) {
	final := map[string]item{}
	for _, k := range keys {
		deadline := time.Now().Add(time.Minute)
		for {
			call := h.now()
			gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			o, err := sys.client(0).Get(gctx, registers, namespace, k)
			cancel()
			if err == nil {
				final[k] = item{valueOf(o), revOf(o)}
				h.kv(-1, kvInput{Kind: opGet, Key: k}, call, kvOutput{Outcome: outOK, Value: valueOf(o), Rev: revOf(o)})
				break
			}
			if client.IsNotFound(err) {
				h.kv(-1, kvInput{Kind: opGet, Key: k}, call, kvOutput{Outcome: outNotFound})
				break
			}
			if time.Now().After(deadline) || !clock.Sleep(ctx, 200*time.Millisecond) {
				return nil, fmt.Errorf("chaos: the final read of %s never succeeded: %w", k, err)
			}
		}
	}
	return final, nil
}

// waitWatchers gives the watchers time to catch up with the store: it
// reads the store again until every watcher holds what it holds, or time
// is up, and returns the state it compared with last.
func waitWatchers(ctx context.Context, watches []*watchLog, read func() (map[string]item, error),
	state map[string]item, within time.Duration) map[string]item {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		agree := true
		for _, w := range watches {
			agree = agree && len(diffStates("", w.state(), state)) == 0
		}
		if agree || !clock.Sleep(ctx, 200*time.Millisecond) {
			return state
		}
		if fresh, err := read(); err == nil {
			state = fresh
		}
	}
	return state
}

// readState reads every key once (absent keys are left out).
func readState(ctx context.Context, sys system, keys []string) (map[string]item, error) {
	state := map[string]item{}
	for _, k := range keys {
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		o, err := sys.client(0).Get(gctx, registers, namespace, k)
		cancel()
		switch {
		case err == nil:
			state[k] = item{valueOf(o), revOf(o)}
		case !client.IsNotFound(err):
			return nil, err
		}
	}
	return state, nil
}
