// Package proxy is a node's Service proxy, as kube-proxy is a Kubernetes
// node's: it listens on every Service's ports at the node's address and
// passes each connection to a ready endpoint of the Service, on any node,
// in turn. A connection an endpoint refuses is tried on the next one, so
// that a pod gone between two changes costs a retry, not a failure. It
// follows Services and EndpointSlices through watches; an endpoint that
// stops being ready gets no new connection from the moment the proxy sees
// it, and connections it already has run on until they end.
package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// Config configures a node's proxy.
type Config struct {
	Bus    *bus.Conn
	Logger *slog.Logger
	// Address is where it listens: the node's address.
	Address string
	// DialTimeout bounds each try to reach an endpoint (default 2s).
	DialTimeout time.Duration
	// OnRoutes, when set, hears each change of a Service port's
	// endpoints, once the proxy routes to them.
	OnRoutes func(r Routes)
}

// Routes are where a Service port's connections go.
type Routes struct {
	Service   string // its key (object.Key)
	Port      string // the Service port's name, or its number
	Endpoints []string
	At        time.Time
}

// Proxy is a node's Service proxy.
type Proxy struct {
	cfg          Config
	log          *slog.Logger
	svcs, slices *reconcile.Informer

	mu      sync.Mutex
	ports   map[string]*servicePort // by service key and port name
	byKey   map[string][]string     // service key -> its ports' keys
	conns   sync.WaitGroup
	stopped bool
	// changed is closed and replaced at each change of the routes.
	changed chan struct{}
	// pending counts, by pod uid, connections passed on that have had no
	// answer from the pod yet.
	pending map[string]int
}

// New checks the configuration.
func New(cfg Config) (*Proxy, error) {
	if cfg.Bus == nil || cfg.Address == "" {
		return nil, errors.New("proxy: Config needs Bus and Address")
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Proxy{cfg: cfg, log: log.With("component", "proxy"), ports: map[string]*servicePort{}, byKey: map[string][]string{}, changed: make(chan struct{}), pending: map[string]int{}}, nil
}

var (
	serviceKind = reconcile.Kind{Kind: "Service", APIVersion: "v1", Resource: "services", Namespaced: true}
	sliceKind   = reconcile.Kind{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1", Resource: "endpointslices.discovery.k8s.io", Namespaced: true}
)

// byService indexes EndpointSlices by their Service's key.
const byService = "service"

func serviceIndex(o *object.Object) []string {
	if svc := o.Metadata.Labels[kinds.LabelServiceName]; svc != "" {
		return []string{object.Key(o.Metadata.Namespace, svc)}
	}
	return nil
}

// Run proxies until ctx ends; then it closes its listeners and waits for
// the connections it passed on to end.
func (p *Proxy) Run(ctx context.Context) error {
	svcStore, err := p.cfg.Bus.Store(ctx, serviceKind.StoreSpec())
	if err != nil {
		return err
	}
	sliceStore, err := p.cfg.Bus.Store(ctx, sliceKind.StoreSpec())
	if err != nil {
		return err
	}
	svcs, slices := reconcile.NewInformer(serviceKind, svcStore, p.log), reconcile.NewInformer(sliceKind, sliceStore, p.log)
	p.mu.Lock()
	p.svcs, p.slices = svcs, slices
	p.mu.Unlock()
	p.slices.AddIndex(byService, serviceIndex)
	p.svcs.SetDecoder(reconcile.DecodeEach(kinds.ServiceSpecOrNil))
	// A Service's ports can free or take another's: all are looked at.
	p.svcs.OnChange(func(reconcile.Change) { p.syncAll(ctx) })
	p.slices.OnChange(func(ch reconcile.Change) {
		for _, k := range serviceIndex(ch.Object()) {
			p.sync(ctx, k, kinds.DecodedServices(p.svcs))
		}
	})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.svcs.Run(ctx) }()
	go func() { defer wg.Done(); p.slices.Run(ctx) }()
	<-ctx.Done()
	wg.Wait()
	p.mu.Lock()
	p.stopped = true
	for _, sp := range p.ports {
		sp.close()
	}
	p.mu.Unlock()
	p.conns.Wait()
	return nil
}

// sync brings a Service's listeners and routes up to date with the
// informers (all: every Service, for who holds which port): a port the
// Service no longer has is closed, a new one opened, and each port's
// endpoints replaced.
func (p *Proxy) sync(ctx context.Context, key string, all []kinds.DecodedService) {
	want := p.wanted(key, all)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	keep := map[string]bool{}
	var keys []string
	for _, w := range want {
		k := key + "/" + w.name
		keep[k] = true
		keys = append(keys, k)
		sp := p.ports[k]
		if sp != nil && sp.port != w.port {
			sp.close()
			sp = nil
		}
		if sp == nil {
			// A younger Service's listener on the port goes first: the
			// port is this one's now (kinds.PortHolder).
			for ok, other := range p.ports {
				if other.port == w.port {
					other.close()
					delete(p.ports, ok)
				}
			}
			var err error
			if sp, err = p.listen(ctx, key, w); err != nil {
				p.log.Warn("cannot listen for a Service", "service", key, "port", w.port, "err", err)
				continue
			}
			p.ports[k] = sp
		}
		if sp.set(w.endpoints) && p.cfg.OnRoutes != nil {
			addrs := make([]string, len(w.endpoints))
			for i, e := range w.endpoints {
				addrs[i] = e.addr
			}
			p.cfg.OnRoutes(Routes{Service: key, Port: w.name, Endpoints: addrs, At: time.Now()})
		}
	}
	for _, k := range p.byKey[key] {
		if !keep[k] {
			if sp := p.ports[k]; sp != nil {
				sp.close()
				delete(p.ports, k)
			}
		}
	}
	p.byKey[key] = keys
	if len(keys) == 0 {
		delete(p.byKey, key)
	}
	p.notify()
}

// Unrouted returns once the proxy sends a pod no new connection and has
// none to it waiting for the pod's first answer (one it passed on just
// before the pod left rotation may not have been taken by the pod's
// process yet), or once ctx ends. A node's agent waits on it before it
// signals a pod to stop, so that the pod is out of rotation before it
// stops taking connections.
func (p *Proxy) Unrouted(ctx context.Context, podUID string) {
	for {
		p.mu.Lock()
		busy := p.pending[podUID] > 0
		for _, sp := range p.ports {
			busy = busy || sp.routes(podUID)
		}
		changed := p.changed
		p.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// notify wakes whoever waits on a change of the routes or of what is
// pending; the caller holds mu.
func (p *Proxy) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// awaiting counts a connection passed on to pod that has had no answer
// yet; the returned func says it has, or has ended, once.
func (p *Proxy) awaiting(pod string) func() {
	p.mu.Lock()
	p.pending[pod]++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.pending[pod]--; p.pending[pod] <= 0 {
				delete(p.pending, pod)
				p.notify()
			}
			p.mu.Unlock()
		})
	}
}

// wantedPort is a Service port and its ready endpoints.
type wantedPort struct {
	name      string
	port      int32
	endpoints []endpoint
}

// endpoint is where a connection may go: host:port, and its pod's uid.
type endpoint struct {
	addr, pod string
}

// wanted reads a Service's ports that it holds (kinds.PortHolder) and
// their ready endpoints from the informers; none for a Service gone or
// not proxied.
func (p *Proxy) wanted(key string, all []kinds.DecodedService) []wantedPort {
	o, ok := p.svcs.Get(key)
	if !ok || o.Metadata.Deleting() {
		return nil
	}
	v, _ := p.svcs.Value(key)
	spec, _ := v.(*kinds.ServiceSpec)
	if spec == nil {
		return nil
	}
	ports := spec.ProxiedPorts()
	if len(ports) == 0 {
		return nil
	}
	var slices []kinds.EndpointSlice
	for _, so := range p.slices.ByIndex(byService, key) {
		if s, err := kinds.DecodeEndpointSlice(so); err == nil {
			slices = append(slices, s)
		}
	}
	var out []wantedPort
	for _, sp := range ports {
		if h := kinds.PortHolder(sp.Port, all); h == nil || h.Key() != key {
			continue
		}
		name := sp.Name
		if name == "" {
			name = strconv.Itoa(int(sp.Port))
		}
		out = append(out, wantedPort{name: name, port: sp.Port, endpoints: readyEndpoints(slices, sp.Name)})
	}
	return out
}

// syncAll syncs every Service the proxy knows or serves.
func (p *Proxy) syncAll(ctx context.Context) {
	keys := map[string]bool{}
	for _, k := range p.svcs.Keys() {
		keys[k] = true
	}
	p.mu.Lock()
	for k := range p.byKey {
		keys[k] = true
	}
	p.mu.Unlock()
	all := kinds.DecodedServices(p.svcs)
	for k := range keys {
		p.sync(ctx, k, all)
	}
}

// readyEndpoints are the ready endpoints of the slices' port named name,
// each at the port's number there.
func readyEndpoints(slices []kinds.EndpointSlice, name string) []endpoint {
	var out []endpoint
	for _, s := range slices {
		for _, port := range s.Ports {
			if port.Name != name || kinds.Protocol(port.Protocol) != "TCP" || port.Port == 0 {
				continue
			}
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
					continue
				}
				e := endpoint{addr: net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port.Port)))}
				if ep.TargetRef != nil {
					e.pod = ep.TargetRef.UID
				}
				out = append(out, e)
			}
		}
	}
	// In one order whatever order the slices came in, so that the turn
	// goes on when they are read again.
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// servicePort is one Service port's listener and where its connections go.
type servicePort struct {
	p         *Proxy
	service   string
	port      int32
	ln        net.Listener
	endpoints atomic.Pointer[[]endpoint]
	next      atomic.Uint64
}

func (p *Proxy) listen(ctx context.Context, key string, w wantedPort) (*servicePort, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(p.cfg.Address, strconv.Itoa(int(w.port))))
	if err != nil {
		return nil, err
	}
	sp := &servicePort{p: p, service: key, port: w.port, ln: ln}
	sp.endpoints.Store(&[]endpoint{})
	p.conns.Add(1)
	go func() { defer p.conns.Done(); sp.accept(ctx) }()
	return sp, nil
}

// set replaces the endpoints, reporting whether they changed.
func (sp *servicePort) set(eps []endpoint) bool {
	if slices.Equal(*sp.endpoints.Load(), eps) {
		return false
	}
	sp.endpoints.Store(&eps)
	return true
}

// routes reports whether the port sends new connections to the pod.
func (sp *servicePort) routes(pod string) bool {
	for _, e := range *sp.endpoints.Load() {
		if e.pod == pod {
			return true
		}
	}
	return false
}

func (sp *servicePort) close() { _ = sp.ln.Close() }

func (sp *servicePort) accept(ctx context.Context) {
	for {
		c, err := sp.ln.Accept()
		if err != nil {
			return
		}
		sp.p.conns.Add(1)
		go func() { defer sp.p.conns.Done(); sp.serve(ctx, c) }()
	}
}

// serve passes one connection to an endpoint: the next in turn, or the
// one after when it refuses, until each has been tried.
func (sp *servicePort) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	start := int(sp.next.Add(1))
	d := net.Dialer{Timeout: sp.p.cfg.DialTimeout}
	tried := map[string]bool{}
	for i := 0; ; i++ {
		to, answered, ok := sp.pick(start+i, tried)
		if !ok {
			return
		}
		tried[to.addr] = true
		up, err := d.DialContext(ctx, "tcp", to.addr)
		if err != nil {
			answered()
			sp.p.log.Debug("endpoint unreachable; trying the next", "service", sp.service, "endpoint", to.addr, "err", err)
			continue
		}
		defer up.Close()
		defer answered()
		// The proxy stopping ends what it passes on.
		stop := context.AfterFunc(ctx, func() { _ = c.Close(); _ = up.Close() })
		defer stop()
		pipe(c, &firstRead{Conn: up, then: answered})
		return
	}
}

// pick chooses the endpoint at turn among those not tried, and counts a
// connection to it as waiting for its pod's answer. It counts first and
// then checks that the endpoint is still routed to: a pod that Unrouted
// found out of rotation with nothing waiting is then never dialled.
func (sp *servicePort) pick(turn int, tried map[string]bool) (endpoint, func(), bool) {
	for {
		var left []endpoint
		for _, e := range *sp.endpoints.Load() {
			if !tried[e.addr] {
				left = append(left, e)
			}
		}
		if len(left) == 0 {
			return endpoint{}, nil, false
		}
		to := left[turn%len(left)]
		answered := sp.p.awaiting(to.pod)
		if slices.Contains(*sp.endpoints.Load(), to) {
			return to, answered, true
		}
		answered()
	}
}

// firstRead calls then at the first bytes read from its connection.
type firstRead struct {
	net.Conn
	then func()
}

func (f *firstRead) Read(b []byte) (int, error) {
	n, err := f.Conn.Read(b)
	if n > 0 {
		f.then()
	}
	return n, err
}

// pipe copies both ways until both directions end, passing each side's
// end of writing on to the other.
func pipe(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(b, a)
		closeWrite(b)
	}()
	_, _ = io.Copy(a, b)
	closeWrite(a)
	<-done
}

func closeWrite(c net.Conn) {
	if f, ok := c.(*firstRead); ok {
		c = f.Conn
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = c.Close()
}
