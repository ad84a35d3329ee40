// Package bus is the only package that speaks JetStream. It connects to a
// NATS deployment or starts an embedded server, creates the buckets and
// streams Homeostat needs (idempotently, refusing incompatible ones), and
// offers a typed object store over key-value buckets: create, get, update and
// delete guarded by revisions, list, and watch from a revision. Failures come
// back as the sentinel errors in errors.go, to be checked with errors.Is.
package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/clock"
)

// Config says where the bus is: an external NATS deployment (URLs) or an
// embedded server (Embedded). Exactly one must be set.
type Config struct {
	// URLs of an external NATS deployment, e.g. nats://a:4222,nats://b:4222.
	URLs string
	// CredsFile is a NATS credentials file (a user JWT and its seed).
	CredsFile string
	// Creds are credentials given whole rather than in a file; an embedded
	// server with an Operator needs them (Operator.RoleCreds).
	Creds []byte
	// Node, when set, says the credentials are that node's agent's
	// (Operator.NodeCreds). A connection whose credentials confine it (a
	// node's, or a role's but the API's) opens buckets and streams without
	// creating them, and takes replies on the inbox they allow.
	Node string
	// TLS, when set, is used for an external deployment.
	TLS *tls.Config
	// Embedded starts a NATS server in this process.
	Embedded *EmbeddedConfig
	// Replicas of every bucket and stream; 1 when zero. A cluster wants 3.
	Replicas int
	// Name identifies this client in the server's connection list.
	Name string
	// Logger receives connection events; slog.Default when nil.
	Logger *slog.Logger
}

// EmbeddedConfig describes an in-process NATS server with JetStream.
type EmbeddedConfig struct {
	// DataDir holds the JetStream file store; a restart over it keeps every object.
	DataDir string
	// Host and Port for clients in other processes; Port 0 means the NATS
	// default 4222, -1 a random free port.
	Host string
	Port int
	// SyncAlways makes JetStream fsync every write before acknowledging it,
	// which survives power loss at about a fifth of the write throughput.
	SyncAlways bool
	// ServerName names the server in JetStream; "homeostat" when empty.
	ServerName string
	// Operator, when set, decides who may connect: only clients holding
	// credentials it signed, each with the permissions they carry. Without
	// it the server accepts every client.
	Operator *Operator
}

// requestTimeout bounds each request to the bus, whatever the caller's
// deadline: a stream whose leader froze or was cut off answers nothing
// until another is elected, and a caller is better told "not now" (and
// retries) than kept waiting.
const requestTimeout = 5 * time.Second

// retryMax caps the wait between tries of what failed because the bus was
// unavailable. Losing a node costs a new leader's election (4–9 s in NATS,
// not configurable); a retry paced any slower would add its own wait on top.
const retryMax = 500 * time.Millisecond

// bounded is ctx with at most requestTimeout left.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return within(ctx, requestTimeout)
}

// within bounds ctx by d, unless its deadline comes as soon already: a
// timeout inside a sooner deadline bounds nothing more, yet
// context.WithTimeout still makes a context and registers it with its
// parent (an API create made six timeouts, three of them inside sooner
// ones).
func within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return by(ctx, time.Now().Add(d))
}

// by is within for a deadline: ctx itself when its own comes as soon.
func by(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && !dl.After(deadline) {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}

// tryTimeout bounds one attempt of a request that a leader answers (a
// stream's, a consumer's, the cluster's). A request made while there is no
// leader is never answered: the leader elected next does not see it. An
// attempt unanswered for tryTimeout is made again, so that the caller has
// its answer moments after the election rather than at the end of
// requestTimeout.
const tryTimeout = time.Second

// retried runs op, each attempt bounded by tryTimeout, again while it fails
// with ErrUnavailable, for at most requestTimeout. Only for requests that
// may harmlessly be made twice. An attempt that ran out its time is made
// again at once; one refused sooner (no leader yet) after a pause.
func retried(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	pace := clock.Pace{First: 50 * time.Millisecond, Max: retryMax}
	for {
		start := time.Now()
		actx, acancel := within(ctx, tryTimeout)
		err := op(actx)
		acancel()
		if err == nil || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		if time.Since(start) < tryTimeout && !pace.Wait(ctx) {
			return err
		}
	}
}

// Conn is a live connection to the bus: two NATS connections, one for
// writes and requests, one for reads and work queues' deliveries.
//
// A read pulls its messages in batches; the client library sends each
// pull from a goroutine of its own, and the read's iterator asks for the
// next only as it takes a message, and not while a pull's sending has not
// returned. On a connection that also carries a process's writes, that
// sending returns late (the library flushes a full buffer to the socket
// under the connection's lock): the iterator took every message its pulls
// brought, the last one's included, asked for none meanwhile, and then
// waited with nothing asked until its heartbeats were missed (1 s) and it
// started over. A host of simulated nodes met it in 7 of 47 runs of
// 10,000 pods, writing their status while it watched every pod. On a
// connection of their own, pulls leave at once.
type Conn struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	reads    *nats.Conn
	rjs      jetstream.JetStream
	replicas int
	// openOnly: the credentials may not create streams (a node's).
	openOnly bool
	server   *server.Server
	// ownsServer: Close stops server (not so for a Join).
	ownsServer bool
	log        *slog.Logger

	mu      sync.Mutex
	stores  map[string]*Store
	decoded *decodedSets
	// closed and readsClosed close with their connections.
	closed      chan struct{}
	readsClosed chan struct{}
	turns       readTurns
}

// Connect dials the configured NATS, starting the embedded server first when
// asked to. The returned Conn must be closed.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	if (cfg.URLs == "") == (cfg.Embedded == nil) {
		return nil, errors.New("bus: set exactly one of URLs or Embedded")
	}
	if cfg.Embedded == nil {
		return connect(ctx, cfg, nil)
	}
	srv, err := startEmbedded(*cfg.Embedded)
	if err != nil {
		return nil, err
	}
	c, err := connect(ctx, cfg, srv)
	if err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, err
	}
	c.ownsServer = true
	return c, nil
}

// connect dials cfg.URLs, or srv in this process when given.
func connect(ctx context.Context, cfg Config, srv *server.Server) (*Conn, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Conn{replicas: max(cfg.Replicas, 1), log: log, stores: map[string]*Store{}, decoded: &decodedSets{},
		closed: make(chan struct{}), readsClosed: make(chan struct{}), turns: make(readTurns, maxReads)}
	auth, openOnly, err := authOptions(cfg)
	if err != nil {
		return nil, err
	}
	c.openOnly = openOnly
	url := cfg.URLs
	if srv != nil {
		c.server = srv
		auth = append(auth, nats.InProcessServer(srv))
		url = srv.ClientURL()
	} else {
		if cfg.TLS != nil {
			auth = append(auth, nats.Secure(cfg.TLS))
		}
		auth = append(auth, nats.RetryOnFailedConnect(false))
	}
	nc, err := nats.Connect(url, append(natsOptions(cfg.Name, log, c.closed), auth...)...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect %s: %w", url, err)
	}
	c.nc = nc
	reads, err := nats.Connect(url, append(natsOptions(strings.TrimSpace(cfg.Name+" reads"), log.With("conn", "reads"), c.readsClosed), auth...)...)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus: connect %s (reads): %w", url, err)
	}
	c.reads = reads
	// An asynchronous publish whose acknowledgement is lost (its stream's
	// leader died with it) would otherwise wait forever.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(requestTimeout))
	if err == nil {
		c.rjs, err = jetstream.New(reads)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	c.js = js
	if err := c.waitJetStream(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// natsOptions are a connection's options but its credentials and address;
// closed closes with it.
func natsOptions(name string, log *slog.Logger, closed chan struct{}) []nats.Option {
	return []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// A server that hangs (frozen, or cut off behind a black hole) is
		// noticed in a few seconds, not the default minutes, and the
		// connection moves to another.
		nats.PingInterval(2 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("bus disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("bus reconnected", "url", nc.ConnectedUrlRedacted()) }),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		// A refusal by the server (a permission this client lacks) comes
		// asynchronously; logged, it is not a mystery timeout.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Warn("bus error", "err", err) }),
	}
}

// waitJetStream waits until JetStream answers, which in a fresh cluster
// takes until a meta leader is elected.
func (c *Conn) waitJetStream(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.js.AccountInfo(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("bus: JetStream not available: %w", err)
		}
		clock.Sleep(ctx, 200*time.Millisecond)
	}
}

func startEmbedded(cfg EmbeddedConfig) (*server.Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("bus: embedded server needs a data directory")
	}
	name := cfg.ServerName
	if name == "" {
		name = "homeostat"
	}
	opts := &server.Options{
		ServerName: name,
		Host:       cfg.Host,
		Port:       cfg.Port,
		JetStream:  true,
		StoreDir:   cfg.DataDir,
		SyncAlways: cfg.SyncAlways,
		NoSigs:     true,
		NoLog:      true,
	}
	if cfg.Operator != nil {
		if err := cfg.Operator.serverOptions(opts); err != nil {
			return nil, fmt.Errorf("bus: embedded server: %w", err)
		}
		if err := adoptUnauthenticatedStore(cfg.DataDir, cfg.Operator); err != nil {
			return nil, fmt.Errorf("bus: embedded server: %w", err)
		}
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("bus: embedded server on %s did not become ready",
			net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)))
	}
	return srv, nil
}

// Join is another connection (its two) to the embedded server c started, with
// cfg's credentials (cfg.URLs and cfg.Embedded are ignored): for a role
// in the same process that must hold only its own permissions.
func (c *Conn) Join(ctx context.Context, cfg Config) (*Conn, error) {
	if c.server == nil {
		return nil, errors.New("bus: Join needs a connection that started an embedded server")
	}
	cfg.URLs, cfg.Embedded = c.server.ClientURL(), nil
	j, err := connect(ctx, cfg, c.server)
	if err == nil {
		j.decoded = c.decoded
	}
	return j, err
}

// ClientURL is the address other processes use to reach an embedded server;
// empty when connected to an external deployment.
func (c *Conn) ClientURL() string {
	if c.server == nil {
		return ""
	}
	return c.server.ClientURL()
}

// MaxPayload is the largest message the server accepts.
func (c *Conn) MaxPayload() int64 { return c.nc.MaxPayload() }

// Connected reports whether the connection is up right now.
func (c *Conn) Connected() bool { return c.nc.IsConnected() && c.reads.IsConnected() }

// Replicas is the replica count used for every bucket and stream.
func (c *Conn) Replicas() int { return c.replicas }

// Close drains the connections, together, and stops an embedded server.
func (c *Conn) Close() {
	deadline, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, nc := range []*nats.Conn{c.reads, c.nc} {
		if nc != nil && nc.Drain() != nil {
			nc.Close()
		}
	}
	for _, w := range []struct {
		nc     *nats.Conn
		closed <-chan struct{}
	}{{c.reads, c.readsClosed}, {c.nc, c.closed}} {
		if w.nc == nil {
			continue
		}
		select {
		case <-w.closed:
		case <-deadline.Done():
			w.nc.Close()
		}
	}
	c.shutdownServer()
}

// Abandon drops the connections at once, as a process that dies does:
// nothing is drained, acknowledged or released.
func (c *Conn) Abandon() {
	for _, nc := range []*nats.Conn{c.reads, c.nc} {
		if nc != nil {
			nc.Close()
		}
	}
}

func (c *Conn) shutdownServer() {
	if c.server != nil && c.ownsServer {
		c.server.Shutdown()
		c.server.WaitForShutdown()
	}
}

// authOptions are the options that present cfg's credentials, and whether
// they confine the connection (see Config.Node).
func authOptions(cfg Config) (opts []nats.Option, openOnly bool, err error) {
	if cfg.CredsFile != "" {
		creds, err := os.ReadFile(cfg.CredsFile)
		if err != nil {
			return nil, false, fmt.Errorf("bus: credentials: %w", err)
		}
		cfg.Creds = creds
	}
	if n := credsNode(cfg.Creds); n != "" && n != cfg.Node {
		want := "a control-plane role's"
		if cfg.Node != "" {
			want = "node " + cfg.Node + "'s"
		}
		return nil, false, fmt.Errorf("bus: %w: these credentials are node %s's agent's, not %s", ErrInvalid, n, want)
	}
	if cfg.Creds != nil {
		o, err := credsOption(cfg.Creds)
		if err != nil {
			return nil, false, err
		}
		opts = append(opts, o)
	}
	inbox := credsInbox(cfg.Creds)
	if cfg.Node != "" {
		if err := validNodeName(cfg.Node); err != nil {
			return nil, false, err
		}
		inbox = nodeInbox(cfg.Node)
	}
	if inbox != "" {
		// Confined credentials: replies come to the one inbox they may
		// listen on, and streams are the API's to create.
		opts = append(opts, nats.CustomInboxPrefix(inbox))
		openOnly = true
	}
	return opts, openOnly, nil
}
