// Package api serves Homeostat's desired state over HTTP in the shape of the
// Kubernetes API: /api/v1/... for the core kinds and /apis/{group}/{version}/...
// for the rest, with create, get, list, watch, update, merge patch, delete,
// the status subresource and dry runs. It validates and defaults every object
// against its kind's JSON Schema before anything is stored, answers failures
// with a Status object naming each failing field, and keeps no state of its
// own: any number of API processes over one bus serve the same objects.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// Config configures the API service.
type Config struct {
	Bus *bus.Conn
	// Registry of kinds; a new one with the built-in kinds when nil.
	Registry *schemas.Registry
	// Listen is the address to serve on, unless Listener is given.
	Listen   string
	Listener net.Listener
	Logger   *slog.Logger
	// MaxBodyBytes caps request bodies; by default three quarters of the
	// bus's largest message, so that a stored object always fits.
	MaxBodyBytes int64
	// TombstoneRetention is how long deletes stay visible to resumed
	// watches before compaction (default 15 minutes); CompactEvery is how
	// often compaction runs (default 1 minute).
	TombstoneRetention time.Duration
	CompactEvery       time.Duration
	// Extra handlers mounted on the same server (metrics, for instance).
	Extra map[string]http.Handler
}

// Service is one API process.
type Service struct {
	cfg     Config
	bus     *bus.Conn
	reg     *schemas.Registry
	log     *slog.Logger
	maxBody int64
	ready   atomic.Bool
	handler http.Handler
}

// New checks the configuration and builds the handler; Run serves it.
func New(cfg Config) (*Service, error) {
	if cfg.Bus == nil {
		return nil, errors.New("api: Config.Bus is required")
	}
	if cfg.Listener == nil && cfg.Listen == "" {
		return nil, errors.New("api: Config.Listen or Config.Listener is required")
	}
	s := &Service{cfg: cfg, bus: cfg.Bus, reg: cfg.Registry, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.reg == nil {
		reg, err := schemas.New()
		if err != nil {
			return nil, err
		}
		s.reg = reg
	}
	s.maxBody = cfg.MaxBodyBytes
	if s.maxBody <= 0 {
		s.maxBody = cfg.Bus.MaxPayload() * 3 / 4
	}
	if s.cfg.TombstoneRetention == 0 {
		s.cfg.TombstoneRetention = 15 * time.Minute
	}
	if s.cfg.CompactEvery == 0 {
		s.cfg.CompactEvery = time.Minute
	}
	s.handler = s.routes()
	return s, nil
}

// Registry is the kind registry this service serves from.
func (s *Service) Registry() *schemas.Registry { return s.reg }

// Handler is the service's HTTP handler, for embedding in tests.
func (s *Service) Handler() http.Handler { return s.handler }

// Run prepares the store, serves until ctx ends, then shuts down gracefully.
func (s *Service) Run(ctx context.Context) error {
	if err := s.setup(ctx); err != nil {
		return err
	}
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Listen); err != nil {
			return fmt.Errorf("api: listen: %w", err)
		}
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loops := make(chan error, 2)
	go func() { loops <- s.watchDefinitions(ctx) }()
	go func() { loops <- s.compactLoop(ctx) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	s.log.Info("api serving", "addr", ln.Addr().String())
	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	case err = <-loops:
	}
	cancel()
	// Requests end with ctx (watches included); what can remain are
	// connections a client dialed but never used, which Shutdown would wait
	// on for seconds, so they are closed after a short grace.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer scancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		_ = srv.Close()
		if !errors.Is(serr, context.DeadlineExceeded) && err == nil {
			err = serr
		}
	}
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// setup creates the buckets of the built-in kinds and the default namespace.
func (s *Service) setup(ctx context.Context) error {
	for _, res := range s.reg.Resources() {
		if _, err := s.storeFor(ctx, res); err != nil {
			return fmt.Errorf("api: setup %s: %w", res.GroupResource(), err)
		}
	}
	ns, err := s.storeFor(ctx, s.reg.MustLookup("", "namespaces"))
	if err != nil {
		return err
	}
	for _, name := range []string{"default", "homeostat-system"} {
		_, err := ns.Create(ctx, &object.Object{APIVersion: "v1", Kind: "Namespace",
			Metadata: object.Meta{Name: name, Finalizers: []string{object.FinalizerNamespace}},
			Status:   []byte(`{"phase":"Active"}`)})
		if err != nil && !errors.Is(err, bus.ErrAlreadyExists) {
			return fmt.Errorf("api: create namespace %s: %w", name, err)
		}
	}
	return nil
}

func (s *Service) storeFor(ctx context.Context, res *schemas.Resource) (*bus.Store, error) {
	return s.bus.Store(ctx, bus.StoreSpec{Bucket: res.Bucket(), Namespaced: res.Namespaced, TTL: res.TTL})
}

func (s *Service) compactLoop(ctx context.Context) error {
	t := time.NewTicker(s.cfg.CompactEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, res := range s.reg.Resources() {
			st, err := s.storeFor(ctx, res)
			if err != nil {
				continue
			}
			if n, err := st.Compact(ctx, s.cfg.TombstoneRetention); err != nil {
				s.log.Warn("compaction failed", "bucket", st.Bucket(), "err", err)
			} else if n > 0 {
				s.log.Debug("compacted tombstones", "bucket", st.Bucket(), "removed", n)
			}
		}
	}
}

func (s *Service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /api", s.apiVersions)
	mux.HandleFunc("GET /apis", s.apiGroups)
	mux.HandleFunc("GET /api/{version}", s.resourceList)
	mux.HandleFunc("GET /apis/{group}/{version}", s.resourceList)
	mux.HandleFunc("GET /apis/homeostat.io/v1/traces/{id}", s.trace)
	for _, prefix := range []string{"/api/{version}", "/apis/{group}/{version}"} {
		mux.HandleFunc(prefix+"/{resource}", s.serve)
		mux.HandleFunc(prefix+"/{resource}/{name}", s.serve)
		mux.HandleFunc(prefix+"/{resource}/{name}/{sub}", s.serve)
		mux.HandleFunc(prefix+"/namespaces/{ns}/{resource}", s.serve)
		mux.HandleFunc(prefix+"/namespaces/{ns}/{resource}/{name}", s.serve)
		mux.HandleFunc(prefix+"/namespaces/{ns}/{resource}/{name}/{sub}", s.serve)
	}
	for path, h := range s.cfg.Extra {
		mux.Handle(path, h)
	}
	return otelhttp.NewHandler(mux, "api",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && r.URL.Path != "/metrics"
		}))
}

func (s *Service) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() || !s.bus.NC.IsConnected() {
		writeStatus(w, s.log, newError(http.StatusServiceUnavailable, object.ReasonServiceUnavailable, "not ready"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
