package api_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/pki"
	"github.com/homeostat/homeostat/pki/pkitest"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

// clientWith is an HTTP client trusting the test authority and presenting
// the given certificate (none when nil).
func clientWith(t *testing.T, is *pki.Issued) *http.Client {
	t.Helper()
	cfg := authority(t).ClientTLS("")
	if is != nil {
		cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
}

// Without valid credentials every path but the probes answers 401 with a
// Status saying why; a certificate of the cluster's authority names a user.
func TestAuthentication(t *testing.T) {
	base := startAPI(t, bustest.Conn(t))
	ca := authority(t).CA
	other := pkitest.New(t).CA
	issue := func(a *pki.Authority, r pki.Request) *pki.Issued {
		t.Helper()
		is, err := a.Issue(r)
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	for _, tc := range []struct {
		name string
		cert *pki.Issued
		path string
		code int
		why  string
	}{
		{"no credentials", nil, "/api/v1/namespaces/default/pods", 401, "no credentials"},
		{"no credentials, discovery", nil, "/apis", 401, "no credentials"},
		{"no credentials, liveness", nil, "/healthz", 200, ""},
		{"no credentials, readiness", nil, "/readyz", 200, ""},
		{"another authority", issue(other, pki.Request{CommonName: "mallory", Usage: pki.ClientAuth, Lifetime: time.Hour}),
			"/api/v1/namespaces/default/pods", 401, "unknown authority"},
		{"expired", issue(ca, pki.Request{CommonName: "alice", Usage: pki.ClientAuth, Lifetime: time.Hour, Now: time.Now().Add(-2 * time.Hour)}),
			"/api/v1/namespaces/default/pods", 401, "expired"},
		{"a serving certificate", issue(ca, pki.Request{CommonName: "alice", Usage: pki.ServerAuth, Hosts: []string{"localhost"}, Lifetime: time.Hour}),
			"/api/v1/namespaces/default/pods", 401, "usage"},
		{"no user", issue(ca, pki.Request{Usage: pki.ClientAuth, Lifetime: time.Hour}), "/api/v1/namespaces/default/pods", 401, "names no user"},
		{"a user", issue(ca, pki.Request{CommonName: "alice", Organizations: []string{"dev"}, Usage: pki.ClientAuth, Lifetime: time.Hour}),
			"/apis", 200, ""},
		{"a user, not allowed", issue(ca, pki.Request{CommonName: "alice", Organizations: []string{"dev"}, Usage: pki.ClientAuth, Lifetime: time.Hour}),
			"/api/v1/namespaces/default/pods", 403, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := clientWith(t, tc.cert).Get(base + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("GET %s: %d %s, want %d", tc.path, resp.StatusCode, body, tc.code)
			}
			if tc.code != 401 {
				return
			}
			var st object.Status
			if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Reason != object.ReasonUnauthorized {
				t.Fatalf("401 body is not an Unauthorized Status: %s", body)
			}
			if !strings.Contains(st.Message, tc.why) {
				t.Fatalf("401 says %q, want it to say %q", st.Message, tc.why)
			}
		})
	}
}

// A client's certificate is checked again once it expires, though the
// client keeps its connection and the API remembers the chains it has
// verified.
func TestExpiryEndsARememberedCertificate(t *testing.T) {
	base := startAPI(t, bustest.Conn(t))
	// Long enough for the first request to come before it expires on a
	// loaded machine, short enough to wait out.
	is, err := authority(t).CA.Issue(pki.Request{CommonName: "alice", Usage: pki.ClientAuth, Lifetime: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := clientWith(t, is)
	get := func() (int, string) {
		resp, err := c.Get(base + "/apis")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(); code != http.StatusOK {
		t.Fatalf("GET /apis with a valid certificate: %d %s", code, body)
	}
	poll.Until(t, "the expired certificate refused", 30*time.Second, func() bool {
		code, body := get()
		return code == http.StatusUnauthorized && strings.Contains(body, "expired")
	})
}

// Plain HTTP must be asked for: it authenticates no one.
func TestPlaintextMustBeAskedFor(t *testing.T) {
	if _, err := api.New(api.Config{Bus: bustest.Conn(t), Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("an API with neither TLS nor InsecurePlaintext was built")
	}
}
