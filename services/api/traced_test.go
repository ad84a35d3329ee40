package api

import (
	"net/http/httptest"
	"testing"
)

func TestTraced(t *testing.T) {
	for _, c := range []struct {
		method, path, traceparent string
		want                      bool
	}{
		{"POST", "/api/v1/namespaces/default/pods", "", true},
		{"PUT", "/api/v1/namespaces/default/pods/a", "", true},
		{"PATCH", "/api/v1/namespaces/default/pods/a", "", true},
		{"DELETE", "/api/v1/namespaces/default/pods/a", "", true},
		{"GET", "/api/v1/namespaces/default/pods", "", false},
		{"GET", "/api/v1/namespaces/default/pods?watch=true", "", false},
		{"HEAD", "/api/v1/namespaces/default/pods/a", "", false},
		{"GET", "/api/v1/namespaces/default/pods", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"GET", "/healthz", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"GET", "/readyz", "", false},
		{"GET", "/metrics", "", false},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		if c.traceparent != "" {
			r.Header.Set("traceparent", c.traceparent)
		}
		if got := traced(r); got != c.want {
			t.Errorf("%s %s traceparent=%q: traced %v, want %v", c.method, c.path, c.traceparent, got, c.want)
		}
	}
}
