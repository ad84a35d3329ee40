package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/services/controllers"
	"github.com/homeostat/homeostat/services/scheduler"
	"github.com/homeostat/homeostat/tracing"
)

type upOptions struct {
	dataDir    string
	listen     string
	natsListen string
	fsync      string
	noAgent    bool
	evict      time.Duration
	record     bool
	keepPods   bool
	agent      agentOptions
	secure     secureFlags
}

func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "homeostat")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "homeostat")
	}
	return ".homeostat"
}

func newUp(g *globals) *cobra.Command {
	o := &upOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run all of Homeostat in one process over an embedded NATS server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRole(cmd.Context(), "homeostat", func() error { return runUp(cmd.Context(), g, o) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", defaultDataDir(), "directory of the embedded JetStream store")
	f.StringVar(&o.listen, "listen", "127.0.0.1:6440", "address the API listens on")
	f.StringVar(&o.natsListen, "nats-listen", "127.0.0.1:4222", "address the embedded NATS server listens on, for agents in other processes")
	f.BoolVar(&o.noAgent, "no-agent", false, "run no node agent in this process")
	f.DurationVar(&o.evict, "evict-after", 5*time.Minute, "pods of an unreachable node are deleted this long after")
	f.BoolVar(&o.record, "record-traces", true, "keep this process's spans for an hour, for 'homeostat trace'")
	f.BoolVar(&o.keepPods, "keep-pods", false, "leave pods' processes running on exit, for the next start to adopt")
	host, _ := os.Hostname()
	f.StringVar(&o.agent.name, "node-name", strings.ToLower(host), "name of this machine's node")
	f.StringVar(&o.agent.capacity, "capacity", "", "node capacity as cpu=4,memory=8Gi,pods=110 (default: this machine's)")
	f.DurationVar(&o.agent.configSync, "config-sync", 10*time.Second, configSyncHelp)
	f.DurationVar(&o.agent.backoff, "restart-backoff", 10*time.Second, "first crash-loop back-off of a restarting container; it doubles up to 5m")
	f.StringVar(&o.agent.podUser, "pod-user", "", podUserHelp)
	f.StringVar(&o.agent.portRange, "port-range", defaultPortRange, portRangeHelp)
	f.StringVar(&o.agent.proxyAddress, "proxy-address", "", proxyAddressHelp)
	f.IntVar(&o.agent.simulate, "simulate", 0, "host this many simulated nodes instead of the real one")
	f.DurationVar(&o.agent.simDelay, "simulate-delay", 0, "how long a simulated pod takes to report Running")
	f.StringVar(&o.fsync, "fsync", "interval", "when JetStream syncs writes to disk: interval (fast; a killed process loses nothing, a power cut may lose the last seconds) or always (survives power loss, about 5x slower writes)")
	o.secure.register(f)
	return cmd
}

func runUp(ctx context.Context, g *globals, o *upOptions) error {
	log := g.logger()
	if o.fsync != "interval" && o.fsync != "always" {
		return fmt.Errorf("--fsync must be interval or always, not %q", o.fsync)
	}
	host, portStr, err := net.SplitHostPort(o.natsListen)
	if err != nil {
		return fmt.Errorf("--nats-listen: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("--nats-listen: port %q: %w", portStr, err)
	}
	if port == 0 {
		port = -1
	}
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	op, err := bus.LoadOperator(natsDir(o.dataDir))
	if err != nil {
		return fmt.Errorf("--data-dir: NATS keys: %w", err)
	}
	creds, err := controlPlaneCreds(o.dataDir, op)
	if err != nil {
		return fmt.Errorf("--data-dir: NATS credentials: %w", err)
	}
	conn, err := bus.Connect(ctx, bus.Config{
		Embedded: &bus.EmbeddedConfig{DataDir: o.dataDir, Host: host, Port: port, SyncAlways: o.fsync == "always", Operator: op},
		Name:     "homeostat-up", Logger: log, Creds: creds,
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	if o.record {
		sink, err := conn.SpanSink(ctx)
		if err != nil {
			return err
		}
		tracing.Record("homeostat", sink)
	}
	served, err := o.secure.serveAPI(conn, log, o.listen, o.dataDir)
	if err != nil {
		return err
	}
	fmt.Printf("Homeostat is up.\n  API:  %s\n", served.url)
	if served.kubeconfig != "" {
		fmt.Printf("  Kubeconfig: %s (export KUBECONFIG=%s for kubectl)\n", served.kubeconfig, served.kubeconfig)
	}
	fmt.Printf("  NATS: %s (a node agent elsewhere: homeostat nats creds --operator-dir %s --node NAME -o NAME.creds,\n        then homeostat nodeagent --name NAME --nats-creds NAME.creds)\n  Data: %s\nPress Ctrl-C to stop.\n",
		conn.ClientURL(), natsDir(o.dataDir), o.dataDir)
	// The in-process scheduler and controllers are the same replica across
	// restarts over one data directory, so that they take their own lease
	// and claims back at once.
	identity, err := agentIdentity(filepath.Join(o.dataDir, "agent"))
	if err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	ctrlRun, schedRun, closeRoles, err := upRoles(ctx, conn, op, o, log, "up-"+identity)
	if err != nil {
		return err
	}
	defer closeRoles()
	runs := []func(context.Context) error{served.Run, ctrlRun, schedRun}
	if !o.noAgent {
		a := o.agent
		a.dataDir = filepath.Join(o.dataDir, "agent")
		a.listen, a.address, a.heartbeat, a.grace, a.stopPods = "127.0.0.1:0", "127.0.0.1", 10*time.Second, 40*time.Second, !o.keepPods
		runs = append(runs, func(ctx context.Context) error { return runLocalAgent(ctx, g, &a, conn, op) })
	}
	err = runAll(ctx, runs...)
	fmt.Println("Homeostat stopped.")
	return err
}

// upRoles are up's controllers and scheduler, each on a connection with
// its own role's credentials, as they would be in processes of their own.
func upRoles(ctx context.Context, conn *bus.Conn, op *bus.Operator, o *upOptions, log *slog.Logger, identity string) (
	ctrlRun, schedRun func(context.Context) error, closeAll func(), err error) {
	ctrlConn, err := joinRole(ctx, conn, op, bus.RoleControllers, log)
	if err != nil {
		return nil, nil, nil, err
	}
	schedConn, err := joinRole(ctx, conn, op, bus.RoleScheduler, log)
	if err != nil {
		ctrlConn.Close()
		return nil, nil, nil, err
	}
	closeAll = func() { ctrlConn.Close(); schedConn.Close() }
	ctrl, err := controllers.New(controllers.Config{Bus: ctrlConn, Logger: log, EvictAfter: o.evict, Identity: identity})
	if err == nil {
		var sched *scheduler.Service
		if sched, err = scheduler.New(scheduler.Config{Bus: schedConn, Logger: log, Identity: identity}); err == nil {
			return ctrl.Run, sched.Run, closeAll, nil
		}
	}
	closeAll()
	return nil, nil, nil, err
}

// joinRole connects a role of up's control plane to its embedded server
// with the role's own credentials.
func joinRole(ctx context.Context, conn *bus.Conn, op *bus.Operator, role bus.Role, log *slog.Logger) (*bus.Conn, error) {
	creds, err := op.RoleCreds(role)
	if err != nil {
		return nil, err
	}
	return conn.Join(ctx, bus.Config{Name: "homeostat-up-" + string(role), Logger: log, Creds: creds})
}

// runLocalAgent runs up's own node agent with credentials of its own, as
// an agent elsewhere would: a host of simulated nodes has its role's, a
// real node's agent only its node's.
func runLocalAgent(ctx context.Context, g *globals, a *agentOptions, conn *bus.Conn, op *bus.Operator) error {
	if a.simulate > 0 {
		sim, err := joinRole(ctx, conn, op, bus.RoleSimulated, g.logger())
		if err != nil {
			return err
		}
		defer sim.Close()
		return runAgent(ctx, g, a, sim)
	}
	creds, err := op.NodeCreds(a.name)
	if err != nil {
		return fmt.Errorf("--node-name: %w", err)
	}
	node, err := conn.Join(ctx, bus.Config{Name: "homeostat-up-agent", Logger: g.logger(), Creds: creds, Node: a.name})
	if err != nil {
		return err
	}
	defer node.Close()
	return runAgent(ctx, g, a, node)
}

// runAll runs services until ctx ends or one fails, then stops the rest
// and waits for them.
func runAll(ctx context.Context, runs ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runs))
	for _, run := range runs {
		go func() { errs <- run(ctx) }()
	}
	var first error
	for range runs {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}
