package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/pki"
	"github.com/homeostat/homeostat/services/controllers"
)

func newControllers(g *globals) *cobra.Command {
	var bf busFlags
	var workers int
	var metrics, metricsAddrFile, identity string
	var grace, evict time.Duration
	history := true
	cmd := &cobra.Command{
		Use:   "controllers",
		Short: "Run the workload controllers against an external NATS; start more to scale out",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := g.logger()
			return runRole(ctx, "homeostat-controllers", func() error {
				conn, err := bf.connect(ctx, "homeostat-controllers", "", log)
				if err != nil {
					return err
				}
				defer conn.Close()
				svc, err := controllers.New(controllers.Config{Bus: conn, Logger: log, Workers: workers, NodeGrace: grace, EvictAfter: evict, Identity: identity, NoHistory: !history})
				if err != nil {
					return err
				}
				return runAll(ctx, svc.Run, metricsServer(metricsOptions{addr: metrics, addrFile: metricsAddrFile}, svc.Ready))
			})
		},
	}
	bf.register(cmd.Flags())
	cmd.Flags().IntVar(&workers, "workers", 4, "reconcile workers per controller in this process")
	cmd.Flags().StringVar(&metrics, "metrics-listen", "127.0.0.1:9090", "address serving /metrics and /healthz (empty: none)")
	cmd.Flags().StringVar(&metricsAddrFile, "metrics-address-file", "", metricsAddrFileHelp)
	cmd.Flags().StringVar(&identity, "identity", "", "names this process in its claims on keys; one kept across restarts takes them back at once (default: new each start)")
	cmd.Flags().DurationVar(&grace, "node-grace", 40*time.Second, "a node whose heartbeat is older is marked unreachable")
	cmd.Flags().DurationVar(&evict, "evict-after", 5*time.Minute, "pods of an unreachable node are deleted this long after")
	cmd.Flags().BoolVar(&history, "reconcile-history", true, "record every reconcile in its object's history (what explain and history read)")
	return cmd
}

// metricsAddrFileHelp is the help of every service's
// --metrics-address-file.
const metricsAddrFileHelp = "file to write the address /metrics listens on, once it does (for --metrics-listen with port 0)"

// alwaysReady is the readiness of a service that is ready once it runs.
func alwaysReady() <-chan struct{} {
	ready := make(chan struct{})
	close(ready)
	return ready
}

// metricsOptions say where a service serves its metrics.
type metricsOptions struct {
	addr string
	// addrFile, when set, receives the address listened on.
	addrFile string
}

// metricsServer serves /metrics, /healthz and /readyz until ctx ends;
// ready is the service's readiness (nil until it knows).
func metricsServer(o metricsOptions, ready func() <-chan struct{}) func(context.Context) error {
	return func(ctx context.Context) error {
		if o.addr == "" {
			<-ctx.Done()
			return nil
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metricsHandler())
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
			if !closed(ready()) {
				http.Error(w, "not ready: waiting for the bus and the caches\n", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})
		ln, err := net.Listen("tcp", o.addr)
		if err != nil {
			return err
		}
		if o.addrFile != "" {
			// Whole or not at all: the reader polls for the file.
			if err := pki.WriteFile(o.addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
				ln.Close()
				return fmt.Errorf("--metrics-address-file: %w", err)
			}
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		select {
		case <-ctx.Done():
		case err := <-errc:
			return err
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
		}
		return nil
	}
}

// closed reports whether ch is closed (a nil channel is not).
func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
