package kubeconfig_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/pki"
	"github.com/homeostat/homeostat/pki/pkitest"
)

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists")
	if err := os.WriteFile(exists, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	list := strings.Join([]string{missing, exists}, string(os.PathListSeparator))
	for _, tc := range []struct{ flag, env, want string }{
		{"/flag", list, "/flag"},
		{"", list, exists},
		{"", missing, "/default"},
		{"", "", "/default"},
	} {
		if got := kubeconfig.Locate(tc.flag, tc.env, "/default"); got != tc.want {
			t.Errorf("Locate(%q, %q) = %q, want %q", tc.flag, tc.env, got, tc.want)
		}
	}
}

// A file written with inline certificates, and one naming files relative
// to itself, both reach a TLS server as the user they name.
func TestTargetReachesTheServerAsItsUser(t *testing.T) {
	p := pkitest.New(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := "anonymous"
		if len(r.TLS.PeerCertificates) > 0 {
			user = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		if a := r.Header.Get("Authorization"); a != "" {
			user = a
		}
		_, _ = io.WriteString(w, user)
	}))
	srv.TLS = p.Server()
	srv.TLS.ClientAuth = tls.RequestClientCert
	srv.StartTLS()
	defer srv.Close()
	is, err := p.CA.Issue(pki.Request{CommonName: "alice", Usage: pki.ClientAuth, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"ca.crt": p.CA.CertPEM(), "alice.crt": is.CertPEM, "alice.key": is.KeyPEM, "token": []byte("Bearer-less\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	inline := &kubeconfig.Config{
		Clusters:       []kubeconfig.NamedCluster{{Name: "c", Cluster: kubeconfig.Cluster{Server: srv.URL, CertificateAuthorityData: p.CA.CertPEM()}}},
		Users:          []kubeconfig.NamedUser{{Name: "alice", User: kubeconfig.User{ClientCertificateData: is.CertPEM, ClientKeyData: is.KeyPEM}}},
		Contexts:       []kubeconfig.NamedContext{{Name: "ctx", Context: kubeconfig.Context{Cluster: "c", User: "alice", Namespace: "dev"}}},
		CurrentContext: "ctx",
	}
	files := &kubeconfig.Config{
		Clusters: []kubeconfig.NamedCluster{{Name: "c", Cluster: kubeconfig.Cluster{Server: srv.URL, CertificateAuthority: "ca.crt"}}},
		Users: []kubeconfig.NamedUser{
			{Name: "alice", User: kubeconfig.User{ClientCertificate: "alice.crt", ClientKey: "alice.key"}},
			{Name: "bot", User: kubeconfig.User{TokenFile: "token"}},
		},
		Contexts: []kubeconfig.NamedContext{
			{Name: "ctx", Context: kubeconfig.Context{Cluster: "c", User: "alice"}},
			{Name: "bot", Context: kubeconfig.Context{Cluster: "c", User: "bot"}},
		},
		CurrentContext: "ctx",
	}
	for _, tc := range []struct {
		name, context, want string
		cfg                 *kubeconfig.Config
	}{
		{"inline", "", "alice", inline},
		{"files", "", "alice", files},
		{"token", "bot", "Bearer Bearer-less", files},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".kubeconfig")
			if err := tc.cfg.Write(path); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("written file: %v, mode %v; want 0600", err, fi.Mode().Perm())
			}
			cfg, err := kubeconfig.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			target, err := cfg.Target(tc.context)
			if err != nil {
				t.Fatal(err)
			}
			if got := seenAs(t, target); got != tc.want {
				t.Fatalf("the server saw %q, want %q", got, tc.want)
			}
		})
	}
	if got, _ := inline.Target(""); got.Namespace != "dev" {
		t.Errorf("namespace %q, want dev", got.Namespace)
	}

	// A kubeconfig for the same cluster with a token, written elsewhere,
	// carries the authority with it.
	loaded, err := kubeconfig.Load(filepath.Join(dir, "files.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	tokcfg, err := loaded.WithToken("", "ci", "t0k")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ci.kubeconfig")
	if err := tokcfg.Write(path); err != nil {
		t.Fatal(err)
	}
	target, err := kubeconfig.LoadTarget(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := seenAs(t, target); got != "Bearer t0k" {
		t.Fatalf("with the token's kubeconfig the server saw %q", got)
	}
}

// seenAs is who the test server says a target's client is.
func seenAs(t *testing.T, target *kubeconfig.Target) string {
	t.Helper()
	resp, err := target.HTTPClient().Get(target.Server)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestLoadErrors(t *testing.T) {
	if _, err := kubeconfig.Load(filepath.Join(t.TempDir(), "none")); !errors.Is(err, kubeconfig.ErrNotFound) {
		t.Fatalf("a missing file: %v, want ErrNotFound", err)
	}
	c := &kubeconfig.Config{CurrentContext: "nope"}
	if _, err := c.Target(""); err == nil || !strings.Contains(err.Error(), `no context "nope"`) {
		t.Fatalf("a missing context: %v", err)
	}
	c = &kubeconfig.Config{Contexts: []kubeconfig.NamedContext{{Name: "x", Context: kubeconfig.Context{Cluster: "gone"}}}}
	if _, err := c.Target("x"); err == nil || !strings.Contains(err.Error(), `no cluster "gone"`) {
		t.Fatalf("a missing cluster: %v", err)
	}
}

// Writers that share a data directory (API replicas starting together)
// write the same kubeconfig at once: each write lands whole, none fails,
// and no temporary file is left behind.
func TestConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.kubeconfig")
	const writers = 8
	errs := make(chan error, writers*20)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				c := &kubeconfig.Config{CurrentContext: fmt.Sprintf("writer-%d", w)}
				errs <- c.Write(path)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a concurrent write: %v", err)
		}
	}
	c, err := kubeconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.CurrentContext, "writer-") {
		t.Fatalf("the file holds context %q, no writer's", c.CurrentContext)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("%d files left in the directory, want the kubeconfig alone", len(entries))
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("the kubeconfig's mode %v, want 0600", info.Mode().Perm())
	}
}
