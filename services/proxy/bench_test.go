package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/services/nodeagent"
	"github.com/homeostat/homeostat/services/proxy"
	"github.com/homeostat/homeostat/testenv"
	"github.com/homeostat/homeostat/testenv/poll"
)

// BenchmarkEndpointPropagation: 100 Services of 10 pods each on 10
// simulated nodes (each its own address), and a proxy of another node.
// burst: all made at once, for each pod from the moment a watcher of pods
// sees it Ready to the moment that proxy routes to it. one: then one pod
// of each Service at a time taken out of readiness and back, from the
// acknowledged write of Ready to the proxy routing to it. Each reports
// the median, p99 and the slowest.
func BenchmarkEndpointPropagation(b *testing.B) {
	const services, per, nodes = 100, 10, 10
	for range b.N {
		b.StopTimer()
		e := testenv.New(b)
		e.Controllers()
		e.Scheduler("s1")
		for i := range nodes {
			e.Node(fmt.Sprintf("n%d", i), kinds.ResourceList{"cpu": "64", "memory": "64Gi", "pods": "200"}, nil, func(c *nodeagent.Config) {
				c.Address = fmt.Sprintf("127.0.1.%d", i+1)
			})
		}
		lat := &propagation{ready: map[string]time.Time{}, routed: map[string]time.Time{}, now: map[string]map[string]time.Time{}}
		px, err := proxy.New(proxy.Config{Bus: e.Client(), Address: "127.0.0.1", OnRoutes: lat.onRoutes})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- px.Run(ctx) }()
		watchReady(ctx, b, e, lat)
		ports := freePorts(b, services)
		var y strings.Builder
		for i := range services {
			fmt.Fprintf(&y, `---
apiVersion: v1
kind: Service
metadata: {name: s%d}
spec: {selector: {app: s%d}, ports: [{name: http, port: %d, targetPort: http}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: s%d}
spec:
  replicas: %d
  selector: {matchLabels: {app: s%d}}
  template:
    metadata: {labels: {app: s%d}}
    spec: {containers: [{name: c, command: [x], ports: [{name: http, containerPort: 0}]}]}
`, i, i, ports[i], i, per, i, i)
		}
		b.StartTimer()
		e.Apply(y.String())
		poll.Until(b, "every pod routed", 120*time.Second, func() bool { return lat.complete(services * per) })
		b.StopTimer()
		report(b, "burst", lat.delays())
		report(b, "one", flips(b, e, lat, services))
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

func report(b *testing.B, name string, d []time.Duration) {
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	b.ReportMetric(ms(d[len(d)/2]), name+"-p50-ms")
	b.ReportMetric(ms(d[len(d)*99/100]), name+"-p99-ms")
	b.ReportMetric(ms(d[len(d)-1]), name+"-max-ms")
}

// propagation holds when each endpoint was seen ready and when routed,
// and what the proxy routes to now, by Service port.
type propagation struct {
	mu            sync.Mutex
	ready, routed map[string]time.Time
	now           map[string]map[string]time.Time // service port -> endpoint -> routed since
}

func (p *propagation) onRoutes(r proxy.Routes) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := r.Service + "/" + r.Port
	cur := map[string]time.Time{}
	for _, addr := range r.Endpoints {
		if _, ok := p.routed[addr]; !ok {
			p.routed[addr] = r.At
		}
		since, ok := p.now[key][addr]
		if !ok {
			since = r.At
		}
		cur[addr] = since
	}
	p.now[key] = cur
}

// routedSince is since when the proxy routes to addr of a Service port
// (false while it does not).
func (p *propagation) routedSince(key, addr string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.now[key][addr]
	return at, ok
}

// flips takes one pod of each Service out of readiness and back, one
// after another, as its node's agent would write it, and measures from
// the acknowledged write of Ready back to the proxy routing to it.
func flips(b *testing.B, e *testenv.Env, p *propagation, services int) []time.Duration {
	var out []time.Duration
	for i := range services {
		pods := e.Pods("app=s" + strconv.Itoa(i))
		if len(pods) == 0 {
			b.Fatalf("no pod of s%d", i)
		}
		pod := pods[0]
		addr := ""
		for _, port := range pod.Status.ContainerStatuses[0].Ports {
			addr = net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port.ContainerPort)))
		}
		key := "default.s" + strconv.Itoa(i) + "/http"
		setReady(b, e, pod.Metadata.Name, object.ConditionFalse)
		poll.Until(b, "the pod out of rotation", 10*time.Second, func() bool { _, ok := p.routedSince(key, addr); return !ok })
		setReady(b, e, pod.Metadata.Name, object.ConditionTrue)
		acked := time.Now()
		var at time.Time
		poll.Until(b, "the pod back in rotation", 10*time.Second, func() bool {
			var ok bool
			at, ok = p.routedSince(key, addr)
			return ok
		})
		out = append(out, max(at.Sub(acked), 0))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// setReady writes a pod's Ready condition, as its node's agent would.
func setReady(b *testing.B, e *testenv.Env, pod, status string) {
	body := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q}]}}`, status)
	if err := e.C.Do(e.Ctx, http.MethodPatch, e.Res("pods").Path("default", pod)+"/status", []byte(body), "application/merge-patch+json", nil); err != nil {
		b.Fatal(err)
	}
}

func (p *propagation) sawReady(addr string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.ready[addr]; !ok {
		p.ready[addr] = at
	}
}

func (p *propagation) complete(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := 0
	for addr := range p.ready {
		if _, ok := p.routed[addr]; ok {
			k++
		}
	}
	return k >= n
}

// delays are routed − ready, sorted; an endpoint routed before a watcher
// saw its pod ready counts as 0.
func (p *propagation) delays() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	for addr, r := range p.ready {
		if at, ok := p.routed[addr]; ok {
			out = append(out, max(at.Sub(r), 0))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// watchReady records, through a watch of every pod, when each pod's
// endpoint (its address and the number of its port named http) is first
// seen Ready.
func watchReady(ctx context.Context, b *testing.B, e *testenv.Env, p *propagation) {
	kind := reconcile.Kind{Kind: "Pod", APIVersion: "v1", Resource: "pods", Namespaced: true}
	st, err := e.Client().Store(ctx, kind.StoreSpec())
	if err != nil {
		b.Fatal(err)
	}
	inf := reconcile.NewInformer(kind, st, nil)
	inf.SetDecoder(kinds.PodAfter)
	inf.OnChange(func(ch reconcile.Change) {
		pod, ok := ch.NewValue.(*kinds.Pod)
		if !ok || !pod.Ready() || pod.Status.PodIP == "" {
			return
		}
		now := time.Now()
		for _, cs := range pod.Status.ContainerStatuses {
			for _, port := range cs.Ports {
				if port.Name == "http" {
					p.sawReady(net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port.ContainerPort))), now)
				}
			}
		}
	})
	go inf.Run(ctx)
}

// BenchmarkProxyOverhead: an HTTP GET of a small answer, straight to the
// server and through a Service's proxy, on a new connection each (what
// the proxy does per connection: accept, dial, copy) and on one kept-alive
// connection (what it adds per request once connected).
func BenchmarkProxyOverhead(b *testing.B) {
	e, port := webService(b)
	be := startBackend(b, "a")
	podOn(b, e, be, true)
	routed := make(chan struct{})
	var once sync.Once
	runProxy(b, proxy.Config{Bus: e.Client(), Address: "127.0.0.1", OnRoutes: func(r proxy.Routes) {
		if len(r.Endpoints) > 0 {
			once.Do(func() { close(routed) })
		}
	}})
	select {
	case <-routed:
	case <-time.After(30 * time.Second):
		b.Fatal("the proxy never routed to the server")
	}
	direct := "http://127.0.0.1:" + strconv.Itoa(int(be.port)) + "/"
	proxied := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	for _, tc := range []struct {
		name, url string
		keep      bool
	}{{"direct/new-connection", direct, false}, {"proxied/new-connection", proxied, false},
		{"direct/kept-alive", direct, true}, {"proxied/kept-alive", proxied, true}} {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: !tc.keep}}
			defer c.CloseIdleConnections()
			for range b.N {
				resp, err := c.Get(tc.url)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// freePorts are n distinct ports nothing listens on now: each is held
// until all are found, as a port let go may be handed out again.
func freePorts(b *testing.B, n int) []int {
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}
