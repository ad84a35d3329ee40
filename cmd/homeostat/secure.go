package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/homeostat/homeostat/audit"
	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/pki"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/services/controllers"
)

// adminKubeconfig is the file, in a data directory, that holds the admin
// identity; the CLI reads the one in the default data directory when
// neither --kubeconfig nor $KUBECONFIG says otherwise.
const adminKubeconfig = "admin.kubeconfig"

// secureFlags say how the API is secured, and what it keeps.
type secureFlags struct {
	plaintext   bool
	sans        []string
	auditLevel  string
	auditMaxAge time.Duration
	limits      api.Limits
	retention   retentionFlags
}

func (s *secureFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&s.plaintext, "insecure-plaintext", false, "UNSAFE: serve plain HTTP and authenticate no one, so that anyone who reaches the port may do anything (for tests only)")
	fs.StringVar(&s.auditLevel, "audit-level", string(audit.LevelWrite), "requests recorded in the audit log: Write (every write and every refused request), All (reads too) or None")
	fs.DurationVar(&s.auditMaxAge, "audit-max-age", 7*24*time.Hour, "how long audit records are kept")
	fs.IntVar(&s.limits.InFlight, "max-requests-inflight-per-user", 100, "requests one user may have served at once (watches aside); beyond it the API answers 429 (system:masters is exempt)")
	fs.IntVar(&s.limits.LongRunning, "max-watches-per-user", 250, "watches and followed logs one user may hold open")
	s.retention.register(fs)
	fs.StringSliceVar(&s.sans, "tls-san", nil, "more host names or addresses for the API's serving certificate (127.0.0.1, localhost and the host name are always in it)")
}

// apply secures cfg for an API listening on addr with the authority kept
// in dataDir (made on first start), and writes the admin kubeconfig
// there; it returns that file, nil when plaintext.
func (s *secureFlags) apply(cfg *api.Config, dataDir string, addr net.Addr) (*adminFile, error) {
	level, err := audit.ParseLevel(s.auditLevel)
	if err != nil {
		return nil, fmt.Errorf("--audit-level: %w", err)
	}
	cfg.Audit = api.AuditConfig{Level: level, MaxAge: s.auditMaxAge}
	cfg.Limits = s.limits
	if s.plaintext {
		fmt.Fprintln(os.Stderr, "WARNING: --insecure-plaintext: the API serves plain HTTP and authenticates no one; anyone who reaches it may do anything.")
		cfg.InsecurePlaintext = true
		return nil, nil
	}
	dir := filepath.Join(dataDir, "pki")
	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(addr.String())
	hosts := []string{"127.0.0.1", "localhost"}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, strings.ToLower(h))
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, host)
	}
	hosts = append(hosts, s.sans...)
	serving, err := pki.NewServing(ca, pki.ServingOptions{Dir: dir, Name: "api", Hosts: hosts})
	if err != nil {
		return nil, err
	}
	cfg.TLS = &tls.Config{GetCertificate: serving.GetCertificate, ClientCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	// Agents serving logs beyond loopback answer only this certificate.
	agentClient, err := pki.NewClient(ca, pki.Request{CommonName: pki.APIClientName, Lifetime: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	cfg.AgentTLS = &tls.Config{RootCAs: ca.Pool(), GetClientCertificate: agentClient.GetClientCertificate, MinVersion: tls.VersionTLS12}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	admin := &adminFile{ca: ca, path: filepath.Join(dataDir, adminKubeconfig), server: "https://" + net.JoinHostPort(host, port)}
	return admin, admin.write()
}

// adminFile is the admin kubeconfig an API keeps current.
type adminFile struct {
	ca           *pki.Authority
	path, server string
}

func (a *adminFile) write() error { return writeAdminKubeconfig(a.ca, a.path, a.server) }

// keepCurrent issues the admin identity again whenever it is due, checking
// every interval until ctx ends, so that a long-running server's
// kubeconfig never expires under its users.
func (a *adminFile) keepCurrent(ctx context.Context, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.write(); err != nil {
				log.Error("renewing the admin kubeconfig", "path", a.path, "err", err)
			}
		}
	}
}

// writeAdminKubeconfig writes a kubeconfig for the admin identity (in
// system:masters) at path, issuing the identity again when the file holds
// none for this authority and server, or one due for renewal.
func writeAdminKubeconfig(ca *pki.Authority, path, server string) error {
	if old, err := kubeconfig.Load(path); err == nil && adminCurrent(old, ca, server) {
		return nil
	}
	is, err := ca.Issue(pki.Request{CommonName: "admin", Organizations: []string{api.GroupMasters}, Usage: pki.ClientAuth, Lifetime: pki.ClientLifetime})
	if err != nil {
		return err
	}
	return identityKubeconfig(ca, server, "admin", "default", is).Write(path)
}

// identityKubeconfig is a kubeconfig of one context: the server, the
// authority, and a client identity it issued.
func identityKubeconfig(ca *pki.Authority, server, user, namespace string, is *pki.Issued) *kubeconfig.Config {
	return &kubeconfig.Config{
		Clusters:       []kubeconfig.NamedCluster{{Name: "homeostat", Cluster: kubeconfig.Cluster{Server: server, CertificateAuthorityData: ca.CertPEM()}}},
		Users:          []kubeconfig.NamedUser{{Name: user, User: kubeconfig.User{ClientCertificateData: is.CertPEM, ClientKeyData: is.KeyPEM}}},
		Contexts:       []kubeconfig.NamedContext{{Name: "homeostat", Context: kubeconfig.Context{Cluster: "homeostat", User: user, Namespace: namespace}}},
		CurrentContext: "homeostat",
	}
}

// adminCurrent says whether a kubeconfig already holds a usable admin
// identity of ca for server.
func adminCurrent(c *kubeconfig.Config, ca *pki.Authority, server string) bool {
	if len(c.Clusters) != 1 || len(c.Users) != 1 || c.Clusters[0].Cluster.Server != server ||
		string(c.Clusters[0].Cluster.CertificateAuthorityData) != string(ca.CertPEM()) {
		return false
	}
	pair, err := pki.ParsePair(c.Users[0].User.ClientCertificateData, c.Users[0].User.ClientKeyData)
	return err == nil && pair.Cert.CheckSignatureFrom(ca.Cert()) == nil && !pki.Due(pair.Cert, time.Now())
}

// servedAPI is an API service listening, and how a client reaches it.
type servedAPI struct {
	svc        *api.Service
	url        string
	kubeconfig string // "" when plaintext
	admin      *adminFile
	log        *slog.Logger
}

// adminRenewEvery is how often a running API looks whether the admin
// identity is due: far more often than the third of its year-long
// lifetime at which it is.
const adminRenewEvery = time.Hour

// Run serves until ctx ends, keeping the admin kubeconfig current.
func (a *servedAPI) Run(ctx context.Context) error {
	if a.admin != nil {
		done := make(chan struct{})
		ctx, cancel := context.WithCancel(ctx)
		go func() { defer close(done); a.admin.keepCurrent(ctx, a.log, adminRenewEvery) }()
		defer func() { cancel(); <-done }()
	}
	return a.svc.Run(ctx)
}

// serveAPI listens on listen and builds the API over conn, secured as the
// flags say with the authority kept in dataDir.
func (s *secureFlags) serveAPI(conn *bus.Conn, log *slog.Logger, listen, dataDir string) (*servedAPI, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	cfg := api.Config{Bus: conn, Listener: ln, Logger: log, Extra: metricsHandlers(), Queues: controllers.Queues,
		Controllers: controllers.Owners}
	s.retention.apply(&cfg)
	admin, err := s.apply(&cfg, dataDir, ln.Addr())
	if err != nil {
		ln.Close()
		return nil, err
	}
	svc, err := api.New(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	served := &servedAPI{svc: svc, url: apiURL(cfg, ln.Addr()), admin: admin, log: log}
	if admin != nil {
		served.kubeconfig = admin.path
	}
	return served, nil
}

// apiURL is the URL an API configured by cfg answers on at addr.
func apiURL(cfg api.Config, addr net.Addr) string {
	if cfg.TLS == nil {
		return "http://" + addr.String()
	}
	return "https://" + addr.String()
}
