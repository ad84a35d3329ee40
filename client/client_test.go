package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/object"
)

var deployments = client.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}

const unavailableStatus = `{"apiVersion":"v1","kind":"Status","status":"Failure","message":"the API has lost its connection to the bus and is reconnecting","reason":"ServiceUnavailable","code":503}`

// server answers with h and counts the requests it gets.
func server(t *testing.T, h func(n int64, w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(n.Add(1), w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func unavailable(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(unavailableStatus))
}

// TestGetRetriesThrough503: a read is retried while the API answers 503,
// and succeeds once it answers.
func TestGetRetriesThrough503(t *testing.T) {
	const failures = 3
	srv, n := server(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/apis/apps/v1/namespaces/default/deployments/web" {
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		}
		if n <= failures {
			unavailable(w, "0")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","resourceVersion":"7"},"spec":{"replicas":2}}`))
	})
	c := client.New(srv.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := c.Get(ctx, deployments, "default", "web")
	if err != nil {
		t.Fatalf("Get through %d answers of 503: %v", failures, err)
	}
	if o.Metadata.Name != "web" || o.Metadata.ResourceVersion != "7" || string(o.Spec) != `{"replicas":2}` {
		t.Fatalf("Get decoded %+v", o)
	}
	if got := n.Load(); got != failures+1 {
		t.Fatalf("%d requests, want %d", got, failures+1)
	}
}

// TestShortReadRetryCoversABriefOutage: the first pause of a read retry is
// short (about 100ms), so even a read retry of 400ms rides out one 503.
func TestShortReadRetryCoversABriefOutage(t *testing.T) {
	srv, n := server(t, func(n int64, w http.ResponseWriter, _ *http.Request) {
		if n%2 == 1 {
			unavailable(w, "0")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"}}`))
	})
	c := client.New(srv.URL, nil)
	c.SetReadRetry(400 * time.Millisecond)
	for i := range 3 {
		if _, err := c.Get(context.Background(), deployments, "default", "web"); err != nil {
			t.Fatalf("Get %d with a 400ms read retry, through a single 503: %v (%d requests so far)", i, err, n.Load())
		}
	}
	if got := n.Load(); got != 6 {
		t.Fatalf("%d requests for 3 reads through one 503 each, want 6", got)
	}
}

// TestCreateDoesNotRetry: a write is not idempotent, so a 503 is returned
// at once, as the server's Status, after a single request.
func TestCreateDoesNotRetry(t *testing.T) {
	srv, n := server(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		}
		unavailable(w, "0")
	})
	c := client.New(srv.URL, nil)
	o := &object.Object{APIVersion: "apps/v1", Kind: "Deployment", Metadata: object.Meta{Name: "web", Namespace: "default"}}
	start := time.Now()
	_, err := c.Create(context.Background(), deployments, o)
	if err == nil {
		t.Fatal("Create succeeded against a server answering 503")
	}
	var st *object.Status
	if !errors.As(err, &st) {
		t.Fatalf("Create error %T %v is not an *object.Status", err, err)
	}
	var want object.Status
	_ = json.Unmarshal([]byte(unavailableStatus), &want)
	if st.Code != http.StatusServiceUnavailable || st.Reason != object.ReasonServiceUnavailable || st.Message != want.Message {
		t.Fatalf("Create error %+v, want the server's Status %+v", st, want)
	}
	if client.StatusCode(err) != http.StatusServiceUnavailable {
		t.Fatalf("StatusCode = %d, want 503", client.StatusCode(err))
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("Create made %d requests, want 1 (no retries of a write)", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Create took %s to fail", d)
	}
	// Update, Patch and Delete are writes too.
	_, _ = c.Update(context.Background(), deployments, o, false)
	_, _ = c.Patch(context.Background(), deployments, "default", "web", []byte(`{}`))
	_, _ = c.Delete(context.Background(), deployments, "default", "web", client.DeleteOptions{})
	if got := n.Load(); got != 4 {
		t.Fatalf("%d requests for one create, update, patch and delete, want 4", got)
	}
}

// TestReadRetryIsBounded: against a server that never recovers, a read
// gives up after about its read retry, whatever Retry-After asks, with the
// 503 as its error.
func TestReadRetryIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter string
		plain      bool
	}{
		{"Retry-After 0", "0", false},
		{"Retry-After 1", "1", false},
		{"Retry-After beyond the read retry", "60", false},
		{"no Retry-After, not a Status", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := server(t, func(_ int64, w http.ResponseWriter, _ *http.Request) {
				if tc.plain {
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = w.Write([]byte("upstream connect error\n"))
					return
				}
				unavailable(w, tc.retryAfter)
			})
			c := client.New(srv.URL, nil)
			c.SetReadRetry(300 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			_, err := c.Get(ctx, deployments, "default", "web")
			took := time.Since(start)
			if err == nil {
				t.Fatal("Get succeeded against a server that always answers 503")
			}
			if ctx.Err() != nil {
				t.Fatalf("Get only ended with its context, after %s: %v", took, err)
			}
			// Generous for a loaded machine, far below what Retry-After 60 asks.
			if took > 5*time.Second {
				t.Fatalf("Get with a 300ms read retry took %s to give up", took)
			}
			if code := client.StatusCode(err); code != http.StatusServiceUnavailable {
				t.Fatalf("StatusCode(%v) = %d, want 503", err, code)
			}
			if n.Load() < 1 {
				t.Fatal("no request reached the server")
			}
		})
	}
}

// TestReadRetryZeroTriesOnce: SetReadRetry(0) makes a read a single request.
func TestReadRetryZeroTriesOnce(t *testing.T) {
	srv, n := server(t, func(_ int64, w http.ResponseWriter, _ *http.Request) { unavailable(w, "0") })
	c := client.New(srv.URL, nil)
	c.SetReadRetry(0)
	_, err := c.List(context.Background(), deployments, "", client.ListOptions{})
	if client.StatusCode(err) != http.StatusServiceUnavailable {
		t.Fatalf("List error %v, want a 503 Status", err)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d requests, want 1", got)
	}
}
