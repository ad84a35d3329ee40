package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/object"
)

// apiServer is the API the bench drives with --via-api: its own process
// over the bench's bus, secured as by default (TLS, the admin's client
// certificate, audit of writes), reached as a user would reach it.
type apiServer struct {
	proc   *component
	target *kubeconfig.Target
}

// startAPI runs the API on a port of its choosing and waits until it
// answers /readyz; its admin kubeconfig says where it listens.
func startAPI(ctx context.Context, cfg Config, natsURL, dir string) (*apiServer, error) {
	data := filepath.Join(dir, "api")
	proc, err := startComponent(cfg, dir, "api", []string{"api", "--nats", natsURL, "--listen", "127.0.0.1:0", "--data-dir", data})
	if err != nil {
		return nil, err
	}
	a := &apiServer{proc: proc}
	deadline := time.Now().Add(time.Minute)
	for {
		if a.target == nil {
			a.target, _ = kubeconfig.LoadTarget(filepath.Join(data, "admin.kubeconfig"))
		}
		if a.target != nil && a.ready(ctx) {
			// Its metrics (its writes to the bus) are on its own port,
			// for its admin; one client reads them every time.
			metrics := a.client()
			proc.metrics = func(ctx context.Context) (io.ReadCloser, error) { return metrics.Stream(ctx, "/metrics") }
			return a, nil
		}
		if time.Now().After(deadline) {
			components{proc}.stop()
			return nil, fmt.Errorf("bench: the API did not become ready within a minute (see %s)", filepath.Join(dir, "api.log"))
		}
		if !clock.Sleep(ctx, 100*time.Millisecond) {
			components{proc}.stop()
			return nil, ctx.Err()
		}
	}
}

func (a *apiServer) ready(ctx context.Context) bool {
	return a.client().Do(ctx, http.MethodGet, "/readyz", nil, "", nil) == nil
}

// client is a client of its own: its own connection, as a separate user
// process would have.
func (a *apiServer) client() *client.Client {
	c := client.New(a.target.Server, a.target.HTTPClient())
	c.SetReadRetry(0)
	return c
}

// APIResult holds what the bench measured of the API itself, after the
// pods converged, with the controllers idle.
type APIResult struct {
	// List is the median time to list every pod (JSON, to the last byte),
	// over ListRuns lists.
	List      time.Duration
	ListFirst time.Duration // the first list, before any other
	ListPods  int
	ListBytes int
	ListRuns  int
	// Creates at a paced rate from CreateClients clients.
	CreateClients        int
	CreateRate           float64 // achieved, per second
	CreateP50, CreateP99 time.Duration
	CreateErrors         int
	// CreateConnect is how long the clients took to open their
	// connections (a TLS handshake each, all at once), before the clock
	// started: a client that keeps its connection, as client-go does,
	// pays that once, not on a create.
	CreateConnect time.Duration
	// Watch delivery: from a write's acknowledgement at its writer to its
	// event at each of Watchers watchers.
	Watchers           int
	WatchEvents        int // events expected at each watcher
	WatchP50, WatchP99 time.Duration
	WatchMissed        int // events that never came
}

// Probe sizes the API probes.
type Probe struct {
	// CreateRate creates a second, for CreateFor, from CreateClients.
	CreateRate    int
	CreateFor     time.Duration
	CreateClients int
	// WatchWrites writes at WatchRate a second, each to Watchers watchers.
	Watchers    int
	WatchWrites int
	WatchRate   int
}

// DefaultProbe is what the throughput targets are stated for.
var DefaultProbe = Probe{CreateRate: 2000, CreateFor: 5 * time.Second, CreateClients: 32, Watchers: 100, WatchWrites: 1000, WatchRate: 200}

func (p Probe) withDefaults() Probe {
	d := DefaultProbe
	for _, f := range []struct{ v, def *int }{{&p.CreateRate, &d.CreateRate}, {&p.CreateClients, &d.CreateClients},
		{&p.Watchers, &d.Watchers}, {&p.WatchWrites, &d.WatchWrites}, {&p.WatchRate, &d.WatchRate}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if p.CreateFor <= 0 {
		p.CreateFor = d.CreateFor
	}
	return p
}

// apiProbe measures the API: a list of every pod, paced creates, and the
// delivery of writes to many watchers.
type apiProbe struct {
	api      *apiServer
	size     Probe
	progress func(string, ...any)
}

func (p apiProbe) run(ctx context.Context, pods int) (*APIResult, error) {
	z := p.size.withDefaults()
	r := &APIResult{ListRuns: 5, CreateClients: z.CreateClients, Watchers: z.Watchers, WatchEvents: z.WatchWrites}
	p.progress("API: listing %d pods %d times", pods, r.ListRuns)
	if err := p.list(ctx, r); err != nil {
		return nil, err
	}
	p.progress("API: creates at %d/s from %d clients for %s", z.CreateRate, r.CreateClients, z.CreateFor)
	if err := p.creates(ctx, r, z.CreateRate, z.CreateFor); err != nil {
		return nil, err
	}
	p.progress("API: %d writes to %d watchers", r.WatchEvents, r.Watchers)
	if err := p.watches(ctx, r, z.WatchRate); err != nil {
		return nil, err
	}
	return r, nil
}

// list times r.ListRuns lists of every pod in the namespace, read to the
// last byte but not decoded (a client's decoding is not the API's time).
func (p apiProbe) list(ctx context.Context, r *APIResult) error {
	c := p.api.client()
	var times []time.Duration
	for range r.ListRuns {
		start := time.Now()
		body, err := c.Stream(ctx, "/api/v1/namespaces/default/pods")
		if err != nil {
			return err
		}
		size, err := io.Copy(io.Discard, body)
		body.Close()
		if err != nil {
			return err
		}
		times = append(times, time.Since(start))
		r.ListBytes = int(size)
	}
	r.ListFirst, r.List = times[0], median(times)
	// The count, once, outside the timing.
	l, err := c.List(ctx, podsResource, "default", client.ListOptions{})
	if err != nil {
		return err
	}
	if r.ListPods = len(l.Items); r.ListPods == 0 {
		return errors.New("bench: the list of pods was empty")
	}
	return nil
}

var (
	podsResource       = client.Resource{Version: "v1", Plural: "pods", Kind: "Pod", Namespaced: true}
	configMapsResource = client.Resource{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true}
)

func configMap(name string, labels map[string]string) *object.Object {
	return &object.Object{APIVersion: "v1", Kind: "ConfigMap",
		Metadata: object.Meta{Name: name, Namespace: "default", Labels: labels},
		Fields:   map[string]json.RawMessage{"data": json.RawMessage(`{"k":"v"}`)}}
}

// creates sends ConfigMap creates at rate per second for d, spread over
// the clients, each client sending at its turn (or at once when behind).
// The clients connect first (connect).
func (p apiProbe) creates(ctx context.Context, r *APIResult, rate int, d time.Duration) error {
	total := int(float64(rate) * d.Seconds())
	lat := make([]time.Duration, total)
	errs := make([]error, total)
	clients := make([]*client.Client, r.CreateClients)
	for i := range clients {
		clients[i] = p.api.client()
	}
	var err error
	if r.CreateConnect, err = connect(ctx, clients); err != nil {
		return err
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			for k := i; k < total; k += r.CreateClients {
				at := start.Add(time.Duration(k) * time.Second / time.Duration(rate))
				if !clock.Sleep(ctx, time.Until(at)) {
					return
				}
				t := time.Now()
				_, errs[k] = c.Create(ctx, configMapsResource, configMap("bench-create-"+strconv.Itoa(k), nil))
				lat[k] = time.Since(t)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	var ok []time.Duration
	for k, err := range errs {
		if err != nil {
			r.CreateErrors++
			continue
		}
		ok = append(ok, lat[k])
	}
	if len(ok) == 0 {
		return fmt.Errorf("bench: every create failed, the first with: %w", errs[0])
	}
	r.CreateRate = float64(total) / elapsed.Seconds()
	r.CreateP50, r.CreateP99 = percentiles(ok)
	return nil
}

// connect opens each client's connection with a read that finds
// nothing, all at once, and says how long that took. The first request
// of a client makes its connection, a TLS handshake that costs the API
// milliseconds of CPU: timed among the creates, the clients' 32 first
// requests were a third of the slowest hundred.
func connect(ctx context.Context, clients []*client.Client) (time.Duration, error) {
	start := time.Now()
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			_, errs[i] = c.List(ctx, configMapsResource, "default", client.ListOptions{LabelSelector: "bench=connect", Limit: 1})
		})
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// watches opens the watchers from the current revision, then writes
// r.WatchEvents ConfigMaps at rate per second from one client, and times
// each event at each watcher from the write's acknowledgement. An event
// that comes before its writer has the answer counts as no delay.
func (p apiProbe) watches(ctx context.Context, r *APIResult, rate int) error {
	c := p.api.client()
	sel := client.ListOptions{LabelSelector: "bench=watch"}
	l, err := c.List(ctx, configMapsResource, "default", sel)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	arrivals := make([][]time.Time, r.Watchers)
	var wg sync.WaitGroup
	for w := range r.Watchers {
		ch, err := p.api.client().Watch(ctx, configMapsResource, "default", "", sel, l.Metadata.ResourceVersion)
		if err != nil {
			return err
		}
		arrivals[w] = make([]time.Time, r.WatchEvents)
		wg.Go(func() { receive(ch, arrivals[w], r.WatchEvents) })
	}
	acked := make([]time.Time, r.WatchEvents)
	start := time.Now()
	for k := range r.WatchEvents {
		if !clock.Sleep(ctx, time.Until(start.Add(time.Duration(k)*time.Second/time.Duration(rate)))) {
			return ctx.Err()
		}
		if _, err := c.Create(ctx, configMapsResource, configMap("bench-watch-"+strconv.Itoa(k), map[string]string{"bench": "watch"})); err != nil {
			return err
		}
		acked[k] = time.Now()
	}
	// Watchers that miss events would wait forever: give them a while.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cancel()
		<-done
	case <-ctx.Done():
		<-done
		return ctx.Err()
	}
	var lat []time.Duration
	for _, a := range arrivals {
		for k, t := range a {
			if t.IsZero() {
				r.WatchMissed++
				continue
			}
			lat = append(lat, max(0, t.Sub(acked[k])))
		}
	}
	if len(lat) == 0 {
		return errors.New("bench: no watcher received any event")
	}
	r.WatchP50, r.WatchP99 = percentiles(lat)
	return nil
}

// receive records when each bench-watch-<k> first arrives, until all n
// have or the stream ends.
func receive(ch <-chan client.Event, at []time.Time, n int) {
	seen := 0
	for ev := range ch {
		if ev.Object == nil || ev.Type != "ADDED" {
			continue
		}
		var k int
		if _, err := fmt.Sscanf(ev.Object.Metadata.Name, "bench-watch-%d", &k); err != nil || k < 0 || k >= len(at) || !at[k].IsZero() {
			continue
		}
		at[k] = time.Now()
		if seen++; seen == n {
			// Drain what is left so the stream's reader can end.
			go func() {
				for range ch {
				}
			}()
			return
		}
	}
}

// percentiles reads xs sorted, leaving xs as it was.
func percentiles(xs []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*99/100]
}

func median(xs []time.Duration) time.Duration {
	p50, _ := percentiles(xs)
	return p50
}

// createDeploymentsViaAPI creates the deployments through the API from 32
// clients at once, as users would.
func createDeploymentsViaAPI(ctx context.Context, a *apiServer, objs []*object.Object) error {
	res := client.Resource{Group: "apps", Version: "v1", Plural: "deployments", Kind: "Deployment", Namespaced: true}
	next := make(chan *object.Object)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for range min(32, len(objs)) {
		c := a.client()
		wg.Go(func() {
			for o := range next {
				if _, err := c.Create(ctx, res, o); err != nil {
					select {
					case errc <- fmt.Errorf("bench: create deployment %s through the API: %w", o.Metadata.Name, err):
					default:
					}
				}
			}
		})
	}
	var err error
feed:
	for _, o := range objs {
		select {
		case next <- o:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errc:
		return err
	default:
		return nil
	}
}
