package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/pki"
	"github.com/homeostat/homeostat/services/nodeagent"
	"github.com/homeostat/homeostat/services/nodeagent/process"
	"github.com/homeostat/homeostat/services/proxy"
	"github.com/homeostat/homeostat/services/scheduler"
)

type agentOptions struct {
	name      string
	dataDir   string
	listen    string
	address   string
	capacity  string
	labels    []string
	simulate  int
	simDelay  time.Duration
	heartbeat time.Duration
	grace     time.Duration
	stopPods  bool
	backoff   time.Duration
	// configSync is how often pods' ConfigMaps and Secrets are fetched again.
	configSync time.Duration
	podUser    string
	// portRange is where ports declared without a number are picked.
	portRange string
	// proxyAddress is where the node's Service proxy listens ("" for the
	// node's address, "none" for no proxy).
	proxyAddress string
	// The log endpoint's TLS, required beyond loopback.
	tlsCert, tlsKey, clientCA string
	metrics                   metricsOptions
}

const podUserHelp = "UID[:GID] that a pod's processes run as when it names no securityContext.runAsUser (default: the agent's own user)"

// defaultUser reads --pod-user.
func (o *agentOptions) defaultUser() (*process.Identity, error) {
	if o.podUser == "" {
		return nil, nil
	}
	u, g, hasGroup := strings.Cut(o.podUser, ":")
	uid, err := strconv.ParseUint(u, 10, 31)
	if err != nil {
		return nil, fmt.Errorf("--pod-user %q: want UID or UID:GID, numbers", o.podUser)
	}
	gid := uid
	if hasGroup {
		if gid, err = strconv.ParseUint(g, 10, 31); err != nil {
			return nil, fmt.Errorf("--pod-user %q: want UID or UID:GID, numbers", o.podUser)
		}
	}
	return &process.Identity{UID: uint32(uid), GID: uint32(gid)}, nil
}

const portRangeHelp = "MIN-MAX: the ports a pod's port declared without a number (containerPort 0) is given"

var defaultPortRange = fmt.Sprintf("%d-%d", process.DefaultPortMin, process.DefaultPortMax)

// ports reads --port-range.
func (o *agentOptions) ports() (lo, hi int32, err error) {
	a, b, ok := strings.Cut(o.portRange, "-")
	x, errA := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	y, errB := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
	if !ok || errA != nil || errB != nil || x == 0 || y < x {
		return 0, 0, fmt.Errorf("--port-range %q: want MIN-MAX, ports from 1 to 65535 with MIN <= MAX", o.portRange)
	}
	return int32(x), int32(y), nil
}

const configSyncHelp = "how often pods' ConfigMaps and Secrets are fetched again: a waiting pod retries, mounted files are rewritten"

func (o *agentOptions) register(cmd *cobra.Command) {
	host, _ := os.Hostname()
	f := cmd.Flags()
	f.StringVar(&o.name, "name", strings.ToLower(host), "node name (with --simulate, the prefix of the virtual nodes)")
	f.StringVar(&o.dataDir, "data-dir", filepath.Join(defaultDataDir(), "agent"), "directory for container logs")
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "address serving container logs to the API (beyond loopback it needs --tls-cert, --tls-key and --client-ca)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "certificate of the log endpoint, valid for the node's name (the API reaches https://NAME:PORT)")
	f.StringVar(&o.tlsKey, "tls-key", "", "key of --tls-cert")
	f.StringVar(&o.clientCA, "client-ca", "", "the cluster's authority: the log endpoint answers only the API's certificate it signed ("+pki.APIClientName+")")
	f.StringVar(&o.address, "address", "", "the node's IP, reported as its pods' IP and used to reach its logs (default: 127.0.0.1 when listening on loopback, else this host's first non-loopback IPv4)")
	f.StringVar(&o.capacity, "capacity", "", "capacity as cpu=4,memory=8Gi,pods=110 (default: this machine's)")
	f.StringSliceVar(&o.labels, "label", nil, "node label key=value (repeatable)")
	f.IntVar(&o.simulate, "simulate", 0, "host this many simulated nodes instead of running real processes")
	f.DurationVar(&o.simDelay, "simulate-delay", 0, "how long a simulated pod takes to report Running")
	f.DurationVar(&o.heartbeat, "heartbeat", 10*time.Second, "how often the heartbeat lease is renewed")
	f.DurationVar(&o.grace, "grace", 40*time.Second, "heartbeat lease time-to-live: silent this long, the node is unreachable")
	f.DurationVar(&o.backoff, "restart-backoff", 10*time.Second, "first crash-loop back-off; it doubles up to 5m")
	f.DurationVar(&o.configSync, "config-sync", 10*time.Second, configSyncHelp)
	f.StringVar(&o.podUser, "pod-user", "", podUserHelp)
	f.StringVar(&o.portRange, "port-range", defaultPortRange, portRangeHelp)
	f.StringVar(&o.proxyAddress, "proxy-address", "", proxyAddressHelp)
	f.StringVar(&o.metrics.addr, "metrics-listen", "", "address serving /metrics and /healthz (empty: none)")
	f.StringVar(&o.metrics.addrFile, "metrics-address-file", "", metricsAddrFileHelp)
}

const proxyAddressHelp = "address the node's Service proxy listens on, at each Service's ports (default: the node's address; none: no proxy)"

func (o *agentOptions) resources() (kinds.ResourceList, error) {
	rl := kinds.ResourceList{"cpu": kinds.Quantity(fmt.Sprint(runtime.NumCPU())), "memory": kinds.Quantity(fmt.Sprint(memTotal())), "pods": "110"}
	if o.capacity == "" {
		return rl, nil
	}
	for _, kv := range strings.Split(o.capacity, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--capacity: %q is not name=quantity", kv)
		}
		if _, err := kinds.Quantity(v).Value(); err != nil {
			return nil, fmt.Errorf("--capacity: %w", err)
		}
		rl[strings.TrimSpace(k)] = kinds.Quantity(strings.TrimSpace(v))
	}
	return rl, nil
}

// memTotal reads the machine's memory from /proc/meminfo.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 8 << 30
	}
	var kb int64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			_, _ = fmt.Sscanf(strings.TrimPrefix(line, "MemTotal:"), "%d", &kb)
		}
	}
	return kb * 1024
}

// checkLogEndpoint refuses a log endpoint beyond loopback without TLS and
// a client authority: it would serve every pod's log to anyone who
// reaches it (a pod on another node, say).
func (o *agentOptions) checkLogEndpoint() error {
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	given := 0
	for _, f := range []string{o.tlsCert, o.tlsKey, o.clientCA} {
		if f != "" {
			given++
		}
	}
	if given != 0 && given != 3 {
		return errors.New("--tls-cert, --tls-key and --client-ca go together")
	}
	ip := net.ParseIP(host)
	if given == 0 && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %s is beyond loopback: give --tls-cert, --tls-key and --client-ca, so that the agent serves logs to the API alone", o.listen)
	}
	return nil
}

// tlsListener serves ln over TLS, asking for a client certificate of the
// authority in --client-ca.
func (o *agentOptions) tlsListener(ln net.Listener) (net.Listener, error) {
	cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	caPEM, err := os.ReadFile(o.clientCA)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		ln.Close()
		return nil, fmt.Errorf("--client-ca: no certificates in %s", o.clientCA)
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}), nil
}

// hostAddress is the address others reach this node at: loopback when the
// agent listens there, else the first non-loopback IPv4 address.
func hostAddress(listen net.IP) string {
	if listen.IsLoopback() {
		return listen.String()
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// agentIdentity is the agent's identity, made once and kept in its data
// directory: a restart over the same directory is the same agent, which
// takes its node back at once; another directory is another agent, refused
// the node name while this one lives.
func agentIdentity(dir string) (string, error) {
	path := filepath.Join(dir, "identity")
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b)), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	id := uuid.NewString()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	return id, os.Rename(tmp, path)
}

// runAgent runs a real node agent, or simulated nodes.
func runAgent(ctx context.Context, g *globals, o *agentOptions, conn *bus.Conn) error {
	log := g.logger()
	capacity, err := o.resources()
	if err != nil {
		return err
	}
	labels := map[string]string{}
	for _, l := range o.labels {
		k, v, _ := strings.Cut(l, "=")
		labels[k] = v
	}
	identity, err := agentIdentity(o.dataDir)
	if err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	if o.simulate > 0 {
		return nodeagent.RunSimulated(ctx, nodeagent.SimConfig{Bus: conn, Logger: log, Nodes: o.simulate, Prefix: o.name,
			Identity: identity, Delay: o.simDelay, HeartbeatEvery: o.heartbeat, Grace: o.grace})
	}
	podUser, err := o.defaultUser()
	if err != nil {
		return err
	}
	portMin, portMax, err := o.ports()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program for the log shim: %w", err)
	}
	rt, err := process.New(process.Config{Node: o.name, Agent: identity, Dir: o.dataDir, Logger: log, BackoffBase: o.backoff, DefaultUser: podUser,
		LogShim: []string{self, "logshim"}, PortMin: portMin, PortMax: portMax})
	if err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	addr, port := o.address, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if addr == "" {
		addr = hostAddress(ln.Addr().(*net.TCPAddr).IP)
	}
	agentURL := "http://" + net.JoinHostPort(addr, port)
	if o.tlsCert != "" {
		if ln, err = o.tlsListener(ln); err != nil {
			return err
		}
		agentURL = "https://" + net.JoinHostPort(o.name, port)
	}
	pods, err := conn.NodeWriter(o.name)
	if err != nil {
		ln.Close()
		return fmt.Errorf("--name: %w", err)
	}
	runs := []func(context.Context) error{}
	var routes nodeagent.Routes
	if o.proxyAddress != "none" {
		pxAddr := o.proxyAddress
		if pxAddr == "" {
			pxAddr = addr
		}
		px, err := proxy.New(proxy.Config{Bus: conn, Logger: log, Address: pxAddr})
		if err != nil {
			ln.Close()
			return err
		}
		runs, routes = append(runs, px.Run), px
	}
	a, err := nodeagent.New(nodeagent.Config{Bus: conn, Pods: pods, Logger: log, NodeName: o.name, Identity: identity, Runtime: rt, Capacity: capacity,
		Labels: labels, Address: addr, AgentURL: agentURL, HeartbeatEvery: o.heartbeat, Grace: o.grace,
		StopPodsOnExit: o.stopPods, ConfigSync: o.configSync, Routes: routes})
	if err != nil {
		ln.Close()
		return err
	}
	handler := nodeagent.Handler(a)
	if o.tlsCert != "" {
		handler = nodeagent.OnlyClient(pki.APIClientName, handler)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	serve := func(ctx context.Context) error {
		go func() { <-ctx.Done(); _ = srv.Close() }()
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			return err
		}
		return nil
	}
	return runAll(ctx, append(runs, a.Run, serve)...)
}

func newNodeAgent(g *globals) *cobra.Command {
	var bf busFlags
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "nodeagent",
		Short: "Run a node agent (real processes), or --simulate N virtual nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			return runRole(ctx, "homeostat-nodeagent", func() error {
				// A real node's agent holds only its node's permissions
				// on the bus; a host of simulated nodes writes for all of
				// its nodes (the simulated role's credentials).
				node := o.name
				if o.simulate > 0 {
					node = ""
				} else if err := o.checkLogEndpoint(); err != nil {
					return err
				}
				conn, err := bf.connect(ctx, "homeostat-nodeagent", node, g.logger())
				if err != nil {
					return err
				}
				defer conn.Close()
				return runAll(ctx, func(ctx context.Context) error { return runAgent(ctx, g, o, conn) },
					metricsServer(o.metrics, alwaysReady))
			})
		},
	}
	bf.register(cmd.Flags())
	o.register(cmd)
	return cmd
}

func newScheduler(g *globals) *cobra.Command {
	var bf busFlags
	var metrics, metricsAddrFile, identity string
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run a scheduler replica (one leads; the others stand by)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := g.logger()
			return runRole(ctx, "homeostat-scheduler", func() error {
				conn, err := bf.connect(ctx, "homeostat-scheduler", "", log)
				if err != nil {
					return err
				}
				defer conn.Close()
				svc, err := scheduler.New(scheduler.Config{Bus: conn, Logger: log, Identity: identity})
				if err != nil {
					return err
				}
				return runAll(ctx, svc.Run, metricsServer(metricsOptions{addr: metrics, addrFile: metricsAddrFile}, svc.Ready))
			})
		},
	}
	bf.register(cmd.Flags())
	cmd.Flags().StringVar(&metrics, "metrics-listen", "127.0.0.1:9091", "address serving /metrics and /healthz (empty: none)")
	cmd.Flags().StringVar(&metricsAddrFile, "metrics-address-file", "", metricsAddrFileHelp)
	host, _ := os.Hostname()
	cmd.Flags().StringVar(&identity, "identity", host, "this replica's name in the leadership lease; keep it across restarts, make it unique among replicas")
	return cmd
}

func newLogs(g *globals) *cobra.Command {
	var container string
	var follow, previous bool
	var tail int
	cmd := &cobra.Command{
		Use:   "logs POD",
		Short: "Print a container's output",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := strings.TrimPrefix(strings.TrimPrefix(args[0], "pod/"), "pods/")
			c, err := g.client()
			if err != nil {
				return err
			}
			res, err := c.ResourceFor(cmd.Context(), "pods")
			if err != nil {
				return err
			}
			q := url.Values{}
			if container != "" {
				q.Set("container", container)
			}
			if follow {
				q.Set("follow", "true")
			}
			if previous {
				q.Set("previous", "true")
			}
			if tail > 0 {
				q.Set("tailLines", fmt.Sprint(tail))
			}
			return streamFrom(cmd.Context(), c, res.Path(g.namespace, name)+"/log?"+q.Encode(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container name (needed when the pod has several)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming new output")
	cmd.Flags().BoolVarP(&previous, "previous", "p", false, "the output of the container's previous instance")
	cmd.Flags().IntVar(&tail, "tail", 0, "only the last N lines")
	return cmd
}

func streamFrom(ctx context.Context, c *client.Client, path string, out io.Writer) error {
	body, err := c.Stream(ctx, path)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(out, body)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
