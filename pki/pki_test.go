package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/pki"
)

func TestAuthorityIsMadeOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	a, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.CertPEM()) != string(b.CertPEM()) {
		t.Fatal("a second load made a new authority")
	}
}

func TestClientIdentity(t *testing.T) {
	a, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	is, err := a.Issue(pki.Request{CommonName: "alice", Organizations: []string{"dev", "ops"}, Usage: pki.ClientAuth, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := is.Cert.Verify(x509.VerifyOptions{Roots: a.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client certificate does not verify: %v", err)
	}
	if _, err := is.Cert.Verify(x509.VerifyOptions{Roots: a.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Fatal("a client certificate verified for serving")
	}
	if is.Cert.Subject.CommonName != "alice" || len(is.Cert.Subject.Organization) != 2 {
		t.Fatalf("subject %v", is.Cert.Subject)
	}
	if _, err := pki.ParsePair(is.CertPEM, is.KeyPEM); err != nil {
		t.Fatal(err)
	}
}

func TestDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &x509.Certificate{NotBefore: start, NotAfter: start.Add(300 * time.Hour)}
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, false}, {199 * time.Hour, false}, {201 * time.Hour, true}, {400 * time.Hour, true}} {
		if got := pki.Due(c, start.Add(tc.at)); got != tc.want {
			t.Errorf("Due at +%v = %v, want %v", tc.at, got, tc.want)
		}
	}
}

// clock is a settable time for the serving certificate.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A serving certificate due for renewal is renewed at the next handshake,
// with no restart of the listener, and the renewed one is kept on disk.
func TestServingRenewsWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	a, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Now()}
	opts := pki.ServingOptions{Dir: dir, Name: "api", Hosts: []string{"127.0.0.1", "localhost"}, Lifetime: 30 * time.Hour, Now: clk.Now}
	s, err := pki.NewServing(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.TLS = &tls.Config{GetCertificate: s.GetCertificate}
	srv.StartTLS()
	defer srv.Close()
	served := func() *x509.Certificate {
		t.Helper()
		// A fresh connection each time, so that each request is a handshake.
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: a.Pool(), ServerName: "localhost", Time: clk.Now}, DisableKeepAlives: true}}
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0]
	}
	first := served()
	clk.Add(10 * time.Hour)
	if served().SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("renewed before a third of the lifetime was left")
	}
	clk.Add(11 * time.Hour)
	second := served()
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("not renewed with less than a third of its lifetime left")
	}
	again, err := pki.NewServing(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Leaf().SerialNumber.Cmp(second.SerialNumber) != 0 {
		t.Fatal("the renewed certificate was not kept on disk")
	}
}

// A serving certificate that does not cover a host asked for is issued
// again.
func TestServingCoversNewHosts(t *testing.T) {
	dir := t.TempDir()
	a, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pki.NewServing(a, pki.ServingOptions{Dir: dir, Name: "api", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Leaf().VerifyHostname("api.example.com"); err == nil {
		t.Fatal("covers a host not asked for")
	}
	s2, err := pki.NewServing(a, pki.ServingOptions{Dir: dir, Name: "api", Hosts: []string{"127.0.0.1", "api.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"127.0.0.1", "api.example.com"} {
		if err := s2.Leaf().VerifyHostname(h); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
}

// Processes starting together over one directory agree on one authority.
func TestConcurrentStartsShareOneAuthority(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	pems := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := pki.LoadOrCreateCA(dir)
			if err != nil {
				t.Error(err)
				return
			}
			pems[i] = string(a.CertPEM())
		}()
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if pems[i] != pems[0] {
			t.Fatalf("start %d got another authority", i)
		}
	}
}

// LoadCA reads an authority and never makes one; an authority whose key
// is gone is an error, never a reason to make a new one over it.
func TestLoadCA(t *testing.T) {
	empty := t.TempDir()
	if _, err := pki.LoadCA(empty); !errors.Is(err, pki.ErrNoAuthority) {
		t.Fatalf("LoadCA of an empty directory: %v, want ErrNoAuthority", err)
	}
	if _, err := os.Stat(filepath.Join(empty, "ca.crt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadCA made an authority: %v", err)
	}
	dir := t.TempDir()
	a, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pki.LoadCA(dir)
	if err != nil || string(b.CertPEM()) != string(a.CertPEM()) {
		t.Fatalf("LoadCA: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func(string) (*pki.Authority, error){"LoadCA": pki.LoadCA, "LoadOrCreateCA": pki.LoadOrCreateCA} {
		if _, err := load(dir); err == nil || errors.Is(err, pki.ErrNoAuthority) {
			t.Errorf("%s without the key: %v, want an error saying the key is missing", name, err)
		}
	}
	if cert, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(cert) != string(a.CertPEM()) {
		t.Fatal("the authority's certificate was replaced")
	}
}

// A peer certificate is served and presented by cluster members alike.
func TestPeerCertificate(t *testing.T) {
	a, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	is, err := a.Issue(pki.Request{CommonName: "nats", Hosts: []string{"nats1", "10.0.0.1"}, Usage: pki.PeerAuth, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := is.Cert.Verify(x509.VerifyOptions{Roots: a.Pool(), DNSName: "nats1", KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			t.Errorf("as %v: %v", u, err)
		}
	}
	if len(is.Cert.IPAddresses) != 1 || is.Cert.IPAddresses[0].String() != "10.0.0.1" {
		t.Errorf("IP SANs %v", is.Cert.IPAddresses)
	}
}
