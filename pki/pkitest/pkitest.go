// Package pkitest gives tests an authority of their own: a serving
// configuration for a listener on the loopback address, and HTTP clients
// that present a client certificate for a user and groups.
package pkitest

import (
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/homeostat/homeostat/pki"
)

// PKI is a test's certificate authority.
type PKI struct {
	t  testing.TB
	CA *pki.Authority
}

// New creates an authority in a temporary directory.
func New(t testing.TB) *PKI {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &PKI{t: t, CA: ca}
}

// Server is a TLS configuration serving a certificate for 127.0.0.1 and
// localhost, which verifies client certificates of the authority.
func (p *PKI) Server() *tls.Config {
	p.t.Helper()
	is, err := p.CA.Issue(pki.Request{CommonName: "api", Hosts: []string{"127.0.0.1", "localhost"}, Usage: pki.ServerAuth, Lifetime: 24 * time.Hour})
	if err != nil {
		p.t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: p.CA.Pool(), MinVersion: tls.VersionTLS12}
}

// ClientTLS is a TLS configuration that trusts the authority and presents
// a certificate for user and groups; with no user, it presents none.
func (p *PKI) ClientTLS(user string, groups ...string) *tls.Config {
	p.t.Helper()
	cfg := &tls.Config{RootCAs: p.CA.Pool(), MinVersion: tls.VersionTLS12}
	if user == "" {
		return cfg
	}
	is, err := p.CA.Issue(pki.Request{CommonName: user, Organizations: groups, Usage: pki.ClientAuth, Lifetime: 24 * time.Hour})
	if err != nil {
		p.t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	cfg.Certificates = []tls.Certificate{cert}
	return cfg
}

// Client is an HTTP client presenting a certificate for user and groups.
func (p *PKI) Client(user string, groups ...string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = p.ClientTLS(user, groups...)
	return &http.Client{Transport: tr}
}

// Admin is a client in system:masters.
func (p *PKI) Admin() *http.Client { return p.Client("admin", "system:masters") }
