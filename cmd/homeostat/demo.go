package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
)

// newDemo is a small HTTP server to run as a workload: it answers with who
// it is, serves health and readiness endpoints, and can be told to crash
// or to turn unhealthy, to show restarts and probes.
func newDemo() *cobra.Command {
	var listen, message string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A small HTTP server to run as a workload",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), listen, message)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultListen(), "address to listen on (:0 picks a free port; default :$PORT when the node gave the pod one)")
	cmd.Flags().StringVar(&message, "message", envOr("MESSAGE", "hello from homeostat"), "what / answers")
	return cmd
}

// defaultListen is PORT_ADDR, else the port the node gave the pod (a
// port it declares without a number), else :8080.
func defaultListen() string {
	if port := os.Getenv("PORT"); port != "" {
		return envOr("PORT_ADDR", ":"+port)
	}
	return envOr("PORT_ADDR", ":8080")
}

func runDemo(ctx context.Context, listen, message string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	name := envOr("POD_NAME", host)
	var healthy atomic.Bool
	healthy.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("%s %s %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path)
		fmt.Fprintf(w, "%s (pod %s, pid %d)\n", message, name, os.Getpid())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "unhealthy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("POST /crash", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Println("crashing on request")
		os.Exit(3)
	})
	mux.HandleFunc("POST /sicken", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Println("turning unhealthy on request")
		healthy.Store(false)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Printf("demo %s listening on %s\n", name, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Println("demo stopping: received a signal to terminate")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
