package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/gcpace"
	"github.com/homeostat/homeostat/tracing"
)

// busFlags say how a server role reaches an external NATS deployment.
type busFlags struct {
	urls     string
	creds    string
	tlsCA    string
	tlsCert  string
	tlsKey   string
	replicas int
}

func (b *busFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&b.urls, "nats", envOr("HOMEOSTAT_NATS", "nats://127.0.0.1:4222"), "NATS server URLs, comma-separated ($HOMEOSTAT_NATS)")
	fs.StringVar(&b.creds, "nats-creds", os.Getenv("HOMEOSTAT_NATS_CREDS"), "NATS credentials file of this role ('homeostat nats creds' mints them; $HOMEOSTAT_NATS_CREDS)")
	fs.StringVar(&b.tlsCA, "nats-tls-ca", os.Getenv("HOMEOSTAT_NATS_TLS_CA"), "CA bundle that signs the NATS servers' certificates ($HOMEOSTAT_NATS_TLS_CA)")
	fs.StringVar(&b.tlsCert, "nats-tls-cert", "", "client certificate for NATS (with --nats-tls-key)")
	fs.StringVar(&b.tlsKey, "nats-tls-key", "", "client key for NATS")
	fs.IntVar(&b.replicas, "replicas", 1, "replicas of every bucket and stream (3 in a 3-node cluster)")
}

// connect dials NATS as the flags say; node, when set, names the node
// whose agent connects (see bus.Config.Node).
func (b *busFlags) connect(ctx context.Context, name, node string, log *slog.Logger) (*bus.Conn, error) {
	cfg := bus.Config{URLs: b.urls, CredsFile: b.creds, Replicas: b.replicas, Name: name, Node: node, Logger: log}
	if b.tlsCA != "" || b.tlsCert != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if b.tlsCA != "" {
			pem, err := os.ReadFile(b.tlsCA)
			if err != nil {
				return nil, fmt.Errorf("--nats-tls-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--nats-tls-ca: no certificates in %s", b.tlsCA)
			}
			tc.RootCAs = pool
		}
		if b.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(b.tlsCert, b.tlsKey)
			if err != nil {
				return nil, fmt.Errorf("--nats-tls-cert/--nats-tls-key: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		cfg.TLS = tc
	}
	return bus.Connect(ctx, cfg)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// runRole runs a server role, fn, with the process's tracer provider
// installed and its collector paced (rolePace).
func runRole(ctx context.Context, service string, fn func() error) error {
	defer pace(ctx, rolePace)()
	shutdown, err := tracing.Setup(ctx, tracing.Options{Service: service})
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() { _ = shutdown(context.WithoutCancel(ctx)) }()
	return fn()
}

// rolePace is a server role's collector: Go's default, but the heap may
// always grow by 128 MiB between collections. A role's live heap is its
// caches; while it is small, the default collected tens of times a second
// under load (docs/performance.md, "A server's collector given
// headroom"). From a live heap of that size up, it is the default.
var rolePace = gcpace.Pace{Percent: 100, Headroom: 128 << 20}

// pace runs gcpace.Run with p until ctx ends or the returned stop is
// called, which waits for it.
func pace(ctx context.Context, p gcpace.Pace) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); gcpace.Run(ctx, p) }()
	return func() { cancel(); <-done }
}

func newAPI(g *globals) *cobra.Command {
	var bf busFlags
	var sf secureFlags
	var listen, dataDir string
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Run the HTTP API against an external NATS deployment",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := g.logger()
			return runRole(ctx, "homeostat-api", func() error {
				conn, err := bf.connect(ctx, "homeostat-api", "", log)
				if err != nil {
					return err
				}
				defer conn.Close()
				a, err := sf.serveAPI(conn, log, listen, dataDir)
				if err != nil {
					return err
				}
				log.Info("api", "url", a.url, "kubeconfig", a.kubeconfig)
				return a.Run(ctx)
			})
		},
	}
	bf.register(cmd.Flags())
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:6440", "address the API listens on")
	cmd.Flags().StringVar(&dataDir, "data-dir", defaultDataDir(), "directory of the API's certificate authority and admin kubeconfig; replicas share it")
	sf.register(cmd.Flags())
	return cmd
}

// metricsHandlers mounts /metrics on a service's HTTP server.
func metricsHandlers() map[string]http.Handler {
	return map[string]http.Handler{"GET /metrics": metricsHandler()}
}
