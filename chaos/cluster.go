package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/testenv/tcpproxy"
)

// cluster is three NATS servers and every Homeostat role in processes of
// its own: two API replicas, two controller processes, two scheduler
// replicas, a real node agent and one of simulated nodes. Every route
// between NATS servers, and every client connection to one, goes through a
// loopback proxy: the proxies keep stable addresses while servers restart
// on new ports, and cut links for partitions.
type cluster struct {
	dir  string
	bins Binaries

	nats    [3]*natsNode
	routes  map[[2]int]*tcpproxy.Proxy // routes[i,j]: node i's route to node j
	clients [3]*tcpproxy.Proxy         // clients' way to each node

	apis    []*proc
	apiURLs []string
	ctrls   []*proc
	scheds  []*proc
	agent   *proc
	sim     *proc
	real    string

	// scale runs on the simulated nodes; each NATS node loss rescales it,
	// and how long the pods took to follow is measured.
	scale *rollout
	mu    sync.Mutex
	cls   map[string]*client.Client
	// httpc reaches the APIs as the admin of their kubeconfig.
	httpc    *http.Client
	acts     []actTime
	actFails []string
}

func (c *cluster) prepareScale(ctx context.Context) error {
	c.scale = &rollout{name: "scale", replicas: 3, surge: 1, selector: map[string]string{"homeostat.io/simulated": "true"},
		command: []string{"sleep", "3600"}}
	if err := c.scale.apply(ctx, c, 1); err != nil {
		return err
	}
	_, err := c.scale.waitConverged(ctx, c, 2*time.Minute)
	return err
}

// lossThenScale kills a NATS node, then rescales (3 to 6 pods or back)
// and measures how long the pods take to follow.
func (c *cluster) lossThenScale(ctx context.Context, victim int) error {
	// What is measured is the loss of one node of a healthy cluster, not
	// of a second node while the first is still catching up (no quorum
	// for some streams until one of them is back).
	if !c.waitHealthy(ctx, 2*time.Minute) {
		c.mu.Lock()
		c.actFails = append(c.actFails, "the NATS cluster was not healthy within 2m of the previous fault")
		c.mu.Unlock()
		return nil
	}
	c.nats[victim].proc.kill()
	lost := time.Now()
	want := 6
	if c.scale.replicas == 6 {
		want = 3
	}
	d, err := c.scale.scaleAndWait(ctx, c, want, lost, time.Minute)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.actFails = append(c.actFails, fmt.Sprintf("after a NATS node loss: %v", err))
		return nil
	}
	c.acts = append(c.acts, d)
	return nil
}

// waitHealthy waits until every NATS node answers its health check (every
// stream and consumer it holds current), for at most within.
func (c *cluster) waitHealthy(ctx context.Context, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		ok := true
		for _, n := range c.nats {
			ok = ok && n.healthy(ctx)
		}
		if ok {
			return true
		}
		if time.Now().After(deadline) || !clock.Sleep(ctx, 200*time.Millisecond) {
			return false
		}
	}
}

// healthy reports whether the node's monitoring endpoint says it is.
func (n *natsNode) healthy(ctx context.Context) bool {
	ports, ok := n.ports()
	if !ok || len(ports.Monitoring) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ports.Monitoring[0]+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (c *cluster) actTimes() []actTime {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]actTime(nil), c.acts...)
}

func (c *cluster) actFailures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.actFails...)
}

type natsNode struct {
	i    int
	proc *proc
	dir  string
}

func startCluster(ctx context.Context, dir, bin, natsBin string) (system, error) {
	c := &cluster{dir: dir, bins: Binaries{Homeostat: bin, NATS: natsBin}, routes: map[[2]int]*tcpproxy.Proxy{},
		real: runNodeName("chaos-real-", dir), cls: map[string]*client.Client{}}
	if err := c.writeAuth(); err != nil {
		return nil, err
	}
	if err := c.startNATS(ctx); err != nil {
		c.close()
		return nil, err
	}
	// Faults run through the secure path: a client without credentials
	// is not let in.
	if conn, err := bus.Connect(ctx, bus.Config{URLs: c.natsURLs(), Name: "anonymous"}); err == nil {
		conn.Close()
		c.close()
		return nil, errors.New("chaos: the cluster's NATS servers let in a client without credentials")
	}
	if err := c.startRoles(ctx); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *cluster) startNATS(ctx context.Context) error {
	for i := range 3 {
		p, err := tcpproxy.New("127.0.0.1:1")
		if err != nil {
			return err
		}
		c.clients[i] = p
		for j := range 3 {
			if i != j {
				if c.routes[[2]int{i, j}], err = tcpproxy.New("127.0.0.1:1"); err != nil {
					return err
				}
			}
		}
	}
	for i := range 3 {
		n := &natsNode{i: i, dir: filepath.Join(c.dir, fmt.Sprintf("nats%d", i))}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return err
		}
		conf := filepath.Join(n.dir, "nats.conf")
		if err := os.WriteFile(conf, []byte(c.natsConfig(i, n.dir)), 0o644); err != nil {
			return err
		}
		n.proc = newProc(c.dir, fmt.Sprintf("nats%d", i), c.bins.NATS, "-c", conf)
		c.nats[i] = n
		if err := c.startNode(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// writeAuth makes the cluster's operator, the servers' auth.conf that
// trusts it, and each process's credentials (creds/NAME.creds), as
// `homeostat nats init` does for a deployment.
func (c *cluster) writeAuth() error {
	op, err := bus.LoadOperator(filepath.Join(c.dir, "operator"))
	if err != nil {
		return err
	}
	conf, err := op.ServerConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, "auth.conf"), conf, 0o600); err != nil {
		return err
	}
	files := map[string]func() ([]byte, error){"node": func() ([]byte, error) { return op.NodeCreds(c.real) }}
	for _, r := range bus.Roles {
		files[string(r)] = func() ([]byte, error) { return op.RoleCreds(r) }
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "creds"), 0o700); err != nil {
		return err
	}
	for name, mint := range files {
		b, err := mint()
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.credsFile(name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) credsFile(name string) string { return filepath.Join(c.dir, "creds", name+".creds") }

// natsConfig: a JetStream node that syncs every write (as a cluster
// should), listens on ports of its choosing, tells the harness which,
// reaches its peers only through the harness's proxies, and lets in only
// credentials the cluster's operator signed.
func (c *cluster) natsConfig(i int, dir string) string {
	var routes []string
	for j := range 3 {
		if j != i {
			routes = append(routes, "nats://"+c.routes[[2]int{i, j}].Addr())
		}
	}
	// no_advertise keeps clients on the proxies they were given; an
	// advertised route address nobody answers on keeps servers from
	// gossiping their way around a partition.
	return fmt.Sprintf(`server_name: n%d
include "../auth.conf"
listen: 127.0.0.1:-1
http: 127.0.0.1:-1
ports_file_dir: %q
jetstream { store_dir: %q, sync_interval: always }
cluster {
  name: chaos
  listen: 127.0.0.1:-1
  advertise: "127.0.0.1:1"
  no_advertise: true
  routes: [%s]
}
`, i, dir, filepath.Join(dir, "js"), strings.Join(routes, ", "))
}

// startNode starts NATS node i and points the proxies at its new ports.
func (c *cluster) startNode(ctx context.Context, i int) error {
	n := c.nats[i]
	if err := n.proc.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ports, ok := n.ports(); ok && len(ports.Nats) > 0 && len(ports.Cluster) > 0 {
			c.clients[i].Retarget(hostPort(ports.Nats[0]))
			for j := range 3 {
				if j != i {
					c.routes[[2]int{j, i}].Retarget(hostPort(ports.Cluster[0]))
				}
			}
			return nil
		}
		if time.Now().After(deadline) || !clock.Sleep(ctx, 20*time.Millisecond) {
			return fmt.Errorf("nats node %d did not report its ports", i)
		}
	}
}

type natsPorts struct {
	Nats       []string `json:"nats"`
	Cluster    []string `json:"cluster"`
	Monitoring []string `json:"monitoring"`
}

// ports reads the ports file the running server wrote.
func (n *natsNode) ports() (natsPorts, bool) {
	var p natsPorts
	n.proc.mu.Lock()
	cmd := n.proc.cmd
	n.proc.mu.Unlock()
	if cmd == nil {
		return p, false
	}
	b, err := os.ReadFile(filepath.Join(n.dir, fmt.Sprintf("%s_%d.ports", filepath.Base(n.proc.bin), cmd.Process.Pid)))
	return p, err == nil && json.Unmarshal(b, &p) == nil
}

func hostPort(url string) string {
	_, hp, _ := strings.Cut(url, "://")
	return hp
}

func (c *cluster) natsURLs() string {
	var urls []string
	for _, p := range c.clients {
		urls = append(urls, "nats://"+p.Addr())
	}
	return strings.Join(urls, ",")
}

var apiServing = regexp.MustCompile(`api serving" addr=(\S+)`)

// role is a Homeostat process holding the credentials named creds.
func (c *cluster) role(name, creds string, args ...string) *proc {
	p := newProc(c.dir, name, c.bins.Homeostat, append(args, "--nats", c.natsURLs(), "--nats-creds", c.credsFile(creds),
		"--replicas", "3", "--log-level", "info")...)
	p.env = []string{"OTEL_TRACES_EXPORTER="}
	return p
}

func (c *cluster) startRoles(ctx context.Context) error {
	for i := range 2 {
		// The replicas share one authority, made by the first to start.
		api := c.role(fmt.Sprintf("api%d", i), "api", "api", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(c.dir, "apidata"))
		c.apis = append(c.apis, api)
		c.ctrls = append(c.ctrls, c.role(fmt.Sprintf("controllers%d", i), "controllers", "controllers", "--metrics-listen", "",
			"--node-grace", "6s", "--evict-after", "20s"))
		c.scheds = append(c.scheds, c.role(fmt.Sprintf("scheduler%d", i), "scheduler", "scheduler", "--metrics-listen", "",
			"--identity", fmt.Sprintf("chaos-s%d", i)))
	}
	c.agent = c.role("agent", "node", "nodeagent", "--name", c.real, "--data-dir", filepath.Join(c.dir, "agent"),
		"--listen", "127.0.0.1:0", "--heartbeat", "1s", "--grace", "6s", "--restart-backoff", "1s")
	c.sim = c.role("sim", "simulated", "nodeagent", "--name", "chaos-sim", "--simulate", "4", "--data-dir", filepath.Join(c.dir, "sim"),
		"--heartbeat", "1s", "--grace", "6s")
	all := append(append(append(append([]*proc{}, c.apis...), c.ctrls...), c.scheds...), c.agent, c.sim)
	for _, p := range all {
		if err := p.start(); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for i := range c.apis {
		for {
			b, _ := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("api%d.log", i)))
			if m := apiServing.FindSubmatch(b); m != nil {
				c.apiURLs = append(c.apiURLs, "https://"+string(m[1]))
				break
			}
			if time.Now().After(deadline) || !clock.Sleep(ctx, 50*time.Millisecond) {
				// The log goes with the run's directory: say what it holds.
				return fmt.Errorf("api %d did not start; the end of its log:\n%s", i, logTail(b, 40))
			}
		}
	}
	target, err := kubeconfig.LoadTarget(filepath.Join(c.dir, "apidata", "admin.kubeconfig"))
	if err != nil {
		return err
	}
	c.httpc = target.HTTPClient()
	for _, u := range c.apiURLs {
		for !ready(ctx, c.httpc, u) {
			if time.Now().After(deadline) || !clock.Sleep(ctx, 100*time.Millisecond) {
				return fmt.Errorf("api %s not ready", u)
			}
		}
	}
	return nil
}

func (c *cluster) client(i int) *client.Client {
	u := c.apiURLs[i%len(c.apiURLs)]
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.cls[u]
	if cl == nil {
		cl = client.New(u, c.httpc)
		cl.SetReadRetry(0)
		c.cls[u] = cl
	}
	return cl
}

func (c *cluster) node() string { return c.real }

func (c *cluster) badValues(ctx context.Context, n int) ([]string, error) {
	return writeBadValues(ctx, bus.Config{URLs: c.natsURLs(), CredsFile: c.credsFile("api"), Replicas: 3}, n)
}

// faults of a cluster: each NATS node killed, frozen or cut off from the
// others (dropped or black-holed links), and each kind of Homeostat process
// killed and restarted.
func (c *cluster) faults() []fault {
	var fs []fault
	node := func() int { return rand.IntN(3) }
	var victim int
	fs = append(fs,
		fault{name: "kill -9 of a NATS node, then a scale",
			inject: func(ctx context.Context) error { victim = node(); return c.lossThenScale(ctx, victim) },
			heal:   func(ctx context.Context) error { return c.startNode(ctx, victim) }},
		fault{name: "SIGSTOP of a NATS node",
			inject: func(context.Context) error { victim = node(); c.nats[victim].proc.pause(); return nil },
			heal:   func(context.Context) error { c.nats[victim].proc.resume(); return nil }},
		fault{name: "a NATS node cut off (links dropped)",
			inject: func(context.Context) error { victim = node(); c.cut(victim, tcpproxy.Drop); return nil },
			heal:   func(context.Context) error { c.cut(victim, tcpproxy.Pass); return nil }},
		fault{name: "a NATS node cut off (links black-holed)",
			inject: func(context.Context) error { victim = node(); c.cut(victim, tcpproxy.Stall); return nil },
			heal:   func(context.Context) error { c.cut(victim, tcpproxy.Pass); return nil }},
		fault{name: "kill -9 loop of a controllers process", inject: func(ctx context.Context) error {
			p := c.ctrls[rand.IntN(len(c.ctrls))]
			for range 3 {
				p.kill()
				if err := p.start(); err != nil {
					return err
				}
				clock.Sleep(ctx, time.Duration(200+rand.IntN(800))*time.Millisecond)
			}
			return nil
		}},
		fault{name: "kill -9 of a scheduler", inject: func(context.Context) error {
			p := c.scheds[rand.IntN(len(c.scheds))]
			p.kill()
			return p.start()
		}},
		fault{name: "kill -9 of the node agent",
			inject: func(context.Context) error { c.agent.kill(); return nil },
			heal:   func(context.Context) error { return c.agent.start() }},
	)
	return fs
}

// cut sets every route to and from node i (and its clients' way in, so
// that its clients move to the others) to mode.
func (c *cluster) cut(i int, mode tcpproxy.Mode) {
	for j := range 3 {
		if j != i {
			c.routes[[2]int{i, j}].Set(mode)
			c.routes[[2]int{j, i}].Set(mode)
		}
	}
	c.clients[i].Set(mode)
}

func (c *cluster) close() {
	for _, p := range append(append(append(append([]*proc{}, c.apis...), c.ctrls...), c.scheds...), c.agent, c.sim) {
		if p != nil {
			p.close()
		}
	}
	killNodeProcesses(c.real)
	for _, n := range c.nats {
		if n != nil {
			n.proc.close()
		}
	}
	for _, p := range c.routes {
		p.Close()
	}
	for _, p := range c.clients {
		if p != nil {
			p.Close()
		}
	}
}

// logTail is the last n lines of a log.
func logTail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
