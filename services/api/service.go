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
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"k8s.io/apimachinery/pkg/util/cache"

	"github.com/homeostat/homeostat/audit"
	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/console"
	"github.com/homeostat/homeostat/fieldmanager"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/reconcile"
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
	// TLS serves HTTPS: its certificate (or GetCertificate) is served and
	// its ClientCAs verify client certificates, which name the user. Every
	// request but the probes and /version must then carry credentials.
	TLS *tls.Config
	// InsecurePlaintext serves plain HTTP with no authentication: every
	// request may do anything. Only for tests about something else; it
	// must be asked for, since TLS is otherwise required.
	InsecurePlaintext bool
	// Audit says which requests are recorded in the audit log, and for
	// how long.
	Audit AuditConfig
	// Limits bound what one user may hold of the API at once.
	Limits Limits
	// AgentTLS, when set, is how the API reaches agents that serve logs
	// over HTTPS: the authority that signs their certificates and the
	// client certificate they answer (pki.APIClientName).
	AgentTLS *tls.Config
	// Queues are the controllers' work queues, created at start with the
	// rest of the streams, since the controllers' credentials may not
	// create streams.
	Queues []string
	// Controllers name, by resource (plural.group), the controllers that
	// reconcile it: whose queues explain asks about an object.
	Controllers map[string][]string
	// History bounds the reconcile history (bus defaults when zero).
	History bus.HistoryOptions
	// EventTTL is how long an Event lives after its last change
	// (schemas.EventTTL when zero).
	EventTTL time.Duration
	// ListCacheIdle is how long the objects of a kind are kept in memory
	// to answer lists once no list or lookup uses them
	// (DefaultListCacheIdle when zero).
	ListCacheIdle time.Duration
}

// AuditConfig configures the audit log.
type AuditConfig struct {
	// Level is which requests are recorded: writes and refusals by
	// default (audit.LevelWrite), every request, or none.
	Level audit.Level
	// MaxAge and MaxBytes bound what is kept (7 days, 1 GiB by default).
	MaxAge   time.Duration
	MaxBytes int64
}

// Service is one API process.
type Service struct {
	cfg     Config
	bus     *bus.Conn
	reg     *schemas.Registry
	log     *slog.Logger
	maxBody int64
	handler http.Handler
	// ready: the bus answered for every store the API serves and the
	// custom kinds are known. Until then resource requests get 503.
	ready   atomic.Bool
	retries *bus.RetryRecords
	// history is the reconcile history the controllers write.
	history *bus.History
	// events records Warnings about what the API leaves out (corrupt values).
	events *reconcile.Recorder
	// verified remembers the users of client certificate chains verified
	// lately (see certUser).
	verified *cache.LRUExpireCache
	// idents caches ServiceAccounts and Tokens for authentication.
	idents atomic.Pointer[identities]
	// auditLog is where requests are recorded once setup has opened it;
	// auditLevel says which.
	auditLog   atomic.Pointer[bus.AuditLog]
	auditLevel audit.Level
	// limits, and what each user holds of them.
	limits                Limits
	inFlight, longRunning counts
	// agents fetches logs from node agents.
	agents *http.Client
	// openapi derives the OpenAPI documents and patch metadata from reg.
	openapi *openapi.Cache
	// fields are the field managers of server-side apply.
	fields *fieldmanager.Managers
	// lists answers lists from memory once a kind's cache has synced.
	lists *listCaches
	// checked remembers managed fields the schema check passed.
	checked checkedFields
}

// requestTimeout bounds a request that is not a watch or a log stream.
const requestTimeout = time.Minute

// New checks the configuration and builds the handler; Run serves it.
func New(cfg Config) (*Service, error) {
	if cfg.Bus == nil {
		return nil, errors.New("api: Config.Bus is required")
	}
	if cfg.Listener == nil && cfg.Listen == "" {
		return nil, errors.New("api: Config.Listen or Config.Listener is required")
	}
	switch {
	case cfg.TLS == nil && !cfg.InsecurePlaintext:
		return nil, errors.New("api: Config.TLS is required (or InsecurePlaintext, which authenticates no one)")
	case cfg.TLS != nil && cfg.InsecurePlaintext:
		return nil, errors.New("api: Config.TLS and InsecurePlaintext exclude each other")
	case cfg.TLS != nil && cfg.TLS.ClientCAs == nil:
		return nil, errors.New("api: Config.TLS.ClientCAs is required: it authenticates clients")
	case cfg.TLS != nil:
		cfg.TLS = cfg.TLS.Clone()
		cfg.TLS.ClientAuth = tls.RequestClientCert // verified by authenticate
		cfg.TLS.MinVersion = max(cfg.TLS.MinVersion, tls.VersionTLS12)
	}
	s := &Service{cfg: cfg, bus: cfg.Bus, reg: cfg.Registry, log: cfg.Logger, verified: cache.NewLRUExpireCache(verifiedChains)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.lists = newListCaches(s.log, cfg.ListCacheIdle)
	if s.reg == nil {
		reg, err := schemas.New()
		if err != nil {
			return nil, err
		}
		s.reg = reg
	}
	s.openapi = openapi.NewCache(s.reg)
	s.fields = fieldmanager.New(s.openapi)
	s.limits = cfg.Limits
	s.limits.defaults()
	s.auditLevel = cfg.Audit.Level
	if s.auditLevel == "" {
		s.auditLevel = audit.LevelWrite
	}
	if _, err := audit.ParseLevel(string(s.auditLevel)); err != nil {
		return nil, fmt.Errorf("api: Config.Audit.Level: %w", err)
	}
	s.agents = http.DefaultClient
	if cfg.AgentTLS != nil {
		s.agents = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg.AgentTLS, Proxy: http.ProxyFromEnvironment}}
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
	if s.cfg.EventTTL <= 0 {
		s.cfg.EventTTL = schemas.EventTTL
	}
	s.handler = s.routes()
	return s, nil
}

// Registry is the kind registry this service serves from.
func (s *Service) Registry() *schemas.Registry { return s.reg }

// Handler is the service's HTTP handler, for embedding in tests.
func (s *Service) Handler() http.Handler { return s.handler }

// Run serves until ctx ends, then shuts down gracefully. It listens at
// once, but answers resource requests only once the bus has answered for
// every store it serves (503 until then), so that it never serves from
// streams that are still recovering.
func (s *Service) Run(ctx context.Context) error {
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Listen); err != nil {
			return fmt.Errorf("api: listen: %w", err)
		}
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx },
		TLSConfig: s.cfg.TLS}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serveErr := make(chan error, 1)
	go func() {
		if s.cfg.TLS != nil {
			serveErr <- srv.ServeTLS(ln, "", "")
			return
		}
		serveErr <- srv.Serve(ln)
	}()
	s.log.Info("api serving", "addr", ln.Addr().String())
	loops := make(chan error, 9) // start and each of its loops
	go func() { loops <- s.start(ctx, loops) }()
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
	if errors.Is(err, http.ErrServerClosed) || parent.Err() != nil {
		err = nil // stopping by ctx is not an error, whatever it interrupted
	}
	return err
}

// start prepares the stores, then runs the loops that keep the API
// current (custom kinds, compaction, events) and the node relay until ctx
// ends; their errors go to errs. It returns an error only when setup
// fails.
func (s *Service) start(ctx context.Context, errs chan<- error) error {
	if err := s.setup(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	go func() { errs <- s.watchDefinitions(ctx) }()
	go func() { errs <- s.watchCRDs(ctx) }()
	go func() { errs <- s.compactLoop(ctx) }()
	go func() { errs <- s.lists.run(ctx) }()
	go func() { s.events.Run(ctx); errs <- nil }()
	// Node agents write their pods through the API's replicas.
	go func() { errs <- s.cfg.Bus.ServeNodeRelay(ctx, s.log) }()
	// The controllers remove RBAC objects and tokens through them too.
	go func() { errs <- s.cfg.Bus.ServeCollector(ctx, s.log) }()
	<-ctx.Done()
	return nil
}

// setup creates the buckets of the built-in kinds and the default
// namespaces, waiting for the bus while it cannot answer.
func (s *Service) setup(ctx context.Context) error {
	if s.auditLevel != audit.LevelNone {
		log, err := s.bus.AuditLog(ctx, bus.AuditOptions{MaxAge: s.cfg.Audit.MaxAge, MaxBytes: s.cfg.Audit.MaxBytes})
		if err != nil {
			return fmt.Errorf("api: setup: %w", err)
		}
		s.auditLog.Store(log)
	}
	for _, res := range s.reg.Resources() {
		if _, err := s.storeFor(ctx, res); err != nil {
			return fmt.Errorf("api: setup %s: %w", res.GroupResource(), err)
		}
	}
	if err := s.bus.Retain(ctx, "events", s.cfg.EventTTL); err != nil {
		return fmt.Errorf("api: setup: events: %w", err)
	}
	if err := s.bus.Provision(ctx, bus.ProvisionOptions{Queues: s.cfg.Queues, History: s.cfg.History}); err != nil {
		return fmt.Errorf("api: setup: %w", err)
	}
	var err error
	if s.retries, err = s.bus.RetryRecords(ctx); err != nil {
		return fmt.Errorf("api: setup: %w", err)
	}
	if s.history, err = s.bus.History(ctx, bus.HistoryOptions{}); err != nil {
		return fmt.Errorf("api: setup: %w", err)
	}
	if s.events, err = reconcile.NewRecorder(ctx, s.bus, "homeostat-api", s.log); err != nil {
		return fmt.Errorf("api: setup: %w", err)
	}
	if err := s.startIdentities(ctx); err != nil {
		return fmt.Errorf("api: setup: %w", err)
	}
	if err := s.ensureDefaultRoles(ctx); err != nil {
		return err
	}
	ns, err := s.storeFor(ctx, s.reg.MustLookup("", "namespaces"))
	if err != nil {
		return err
	}
	for _, name := range []string{"default", "homeostat-system", "kube-system", "kube-public", "kube-node-lease"} {
		err := s.bus.UntilAvailable(ctx, "namespace "+name, func(ctx context.Context) error {
			_, err := ns.Create(ctx, &object.Object{APIVersion: "v1", Kind: "Namespace",
				Metadata: object.Meta{Name: name, Finalizers: []string{object.FinalizerNamespace}},
				Status:   []byte(`{"phase":"Active"}`)})
			if errors.Is(err, bus.ErrAlreadyExists) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("api: create namespace %s: %w", name, err)
		}
	}
	return nil
}

func (s *Service) storeFor(ctx context.Context, res *schemas.Resource) (*bus.Store, error) {
	return s.bus.Store(ctx, reconcile.KindOf(res).StoreSpec())
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
				s.log.Warn("compaction failed", "resource", st.Resource(), "err", err)
			} else if n > 0 {
				s.log.Debug("compacted tombstones", "resource", st.Resource(), "removed", n)
			}
		}
		s.sweepTokens(ctx)
	}
}

func (s *Service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /version", versionInfo)
	mux.HandleFunc("GET /openapi/v2", s.openAPIv2)
	mux.HandleFunc("GET /openapi/v3", s.openAPIv3)
	mux.HandleFunc("GET /openapi/v3/{gv...}", s.openAPIv3)
	mux.HandleFunc("GET /api", s.apiVersions)
	mux.HandleFunc("GET /apis", s.apiGroups)
	mux.HandleFunc("GET /api/{version}", s.resourceList)
	mux.HandleFunc("GET /apis/{group}/{version}", s.resourceList)
	mux.HandleFunc("GET /apis/homeostat.io/v1/traces/{id}", s.trace)
	mux.HandleFunc("GET /apis/homeostat.io/v1/auditevents", s.auditEvents)
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/selfsubjectreviews", s.whoami)
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", s.review("SelfSubjectAccessReview"))
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", s.review("SubjectAccessReview"))
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews", s.review("LocalSubjectAccessReview"))
	for _, prefix := range []string{"/api/{version}", "/apis/{group}/{version}"} {
		mux.HandleFunc(prefix+"/{resource}", s.serve)
		mux.HandleFunc(prefix+"/{resource}/{name}", s.serve)
		mux.HandleFunc(prefix+"/{resource}/{name}/{sub}", s.serve)
		mux.HandleFunc(prefix+"/namespaces/{ns}/{resource}", s.serve)
		mux.HandleFunc(prefix+"/namespaces/{ns}/{resource}/{name}", s.serve)
		mux.HandleFunc(prefix+"/namespaces/{ns}/{resource}/{name}/{sub}", s.serve)
	}
	mux.Handle("GET "+console.Prefix, console.Handler())
	mux.Handle("GET /ui", http.RedirectHandler(console.Prefix, http.StatusMovedPermanently))
	for path, h := range s.cfg.Extra {
		mux.Handle(path, h)
	}
	return grownForWrites(otelhttp.NewHandler(s.audited(s.authenticate(s.limit(s.authorize(mux)))), "api",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }),
		otelhttp.WithFilter(traced)))
}

// traced says whether a request gets a span. Every change does, so that an
// apply reads as one trace; a read only when its client sends a trace
// context, as Kubernetes does: recording every list and watch would cost
// the store a write per read, and a burst of reads as much memory again.
func traced(r *http.Request) bool {
	switch {
	case r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics":
		return false
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return r.Header.Get("traceparent") != ""
	}
	return true
}

func (s *Service) readyz(w http.ResponseWriter, _ *http.Request) {
	if e := s.notReady(); e != nil {
		writeStatus(w, s.log, e)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// notReady explains why resources cannot be served now, or is nil.
func (s *Service) notReady() *apiError {
	switch {
	case !s.ready.Load():
		return unavailable("the API is starting: waiting for the bus and the custom kinds")
	case !s.bus.Connected():
		return unavailable("the API has lost its connection to the bus and is reconnecting")
	}
	return nil
}
