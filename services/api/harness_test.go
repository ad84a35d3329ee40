package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/pki/pkitest"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

// The authority of every API these tests start, and a client of it in
// system:masters: made once, on first use.
var (
	pkiOnce     sync.Once
	testPKI     *pkitest.PKI
	adminClient *http.Client
)

func authority(t testing.TB) *pkitest.PKI {
	pkiOnce.Do(func() {
		testPKI = pkitest.New(t)
		// Safe to use from many goroutines at once, with enough idle
		// connections for them, and never waiting forever on an answer.
		adminClient = testPKI.Admin()
		adminClient.Timeout = 45 * time.Second
		adminClient.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	})
	return testPKI
}

// admin is an HTTP client in system:masters.
func admin(t testing.TB) *http.Client {
	authority(t)
	return adminClient
}

// startAPI runs an API service over conn on a random port and returns its base URL.
func startAPI(t testing.TB, conn *bus.Conn, mutate ...func(*api.Config)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{Bus: conn, Listener: ln, CompactEvery: time.Hour, TLS: authority(t).Server()}
	for _, m := range mutate {
		m(&cfg)
	}
	svc, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("api run: %v", err)
		}
	})
	base := "https://" + ln.Addr().String()
	poll.Until(t, "api ready", 15*time.Second, func() bool {
		resp, err := admin(t).Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

type response struct {
	code   int
	header http.Header
	body   []byte
	status object.Status
	obj    object.Object
}

func call(t *testing.T, method, url, contentType, body string) response {
	t.Helper()
	return callAs(t, admin(t), "", method, url, contentType, body)
}

// callAs sends a request through hc, with a bearer token when one is given.
func callAs(t *testing.T, hc *http.Client, token, method, url, contentType, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, b := roundTrip(t, hc, req)
	r := response{code: resp.StatusCode, header: resp.Header, body: b}
	if resp.StatusCode/100 != 2 {
		if err := json.Unmarshal(b, &r.status); err != nil || r.status.Kind != "Status" {
			t.Fatalf("%s %s: error body is not a Status: %s", method, url, b)
		}
	} else {
		_ = json.Unmarshal(b, &r.obj)
	}
	return r
}

// roundTrip makes a request and reads the whole answer.
func roundTrip(t *testing.T, hc *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func mustCode(t *testing.T, r response, code int, reason string) {
	t.Helper()
	if r.code != code || (reason != "" && r.status.Reason != reason) {
		t.Fatalf("got %d %s (%s), want %d %s", r.code, r.status.Reason, r.body, code, reason)
	}
}

func newClient(t *testing.T, base string) *client.Client { return client.New(base, admin(t)) }

func conn(t *testing.T) *bus.Conn { return bustest.Conn(t) }
