package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/testenv/poll"
	"github.com/homeostat/homeostat/tracing"
)

// TestWritesCarryTraceContext: a request's span is stored with the write it
// makes, so that the loops reading the write continue the same trace.
func TestWritesCarryTraceContext(t *testing.T) {
	exp := recordSpans(t)
	c := conn(t)
	base := startAPI(t, c)

	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequest("POST", base+"/api/v1/namespaces/default/pods",
		strings.NewReader(`{"metadata":{"name":"traced"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", parent)
	resp, err := admin(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}

	var apiSpan trace.SpanContext
	for _, s := range exp.GetSpans() {
		if s.Name == "POST /api/v1/namespaces/default/pods" {
			apiSpan = s.SpanContext
		}
	}
	if apiSpan.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("API span trace %s does not continue the caller's trace; spans: %v", apiSpan.TraceID(), exp.GetSpans().Snapshots())
	}
	st, err := c.Store(context.Background(), bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := st.Watch(ctx, bus.WatchOptions{Key: "default.traced"})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-ch
	got := trace.SpanContextFromContext(ev.Context(context.Background()))
	if got.TraceID() != apiSpan.TraceID() || got.SpanID() != apiSpan.SpanID() {
		t.Fatalf("stored trace context %s/%s, want the API span %s/%s", got.TraceID(), got.SpanID(), apiSpan.TraceID(), apiSpan.SpanID())
	}
}

// TestReadsTracedWhenAsked: a read gets a span only when its client sends
// a trace context; every change gets one.
func TestReadsTracedWhenAsked(t *testing.T) {
	exp := recordSpans(t)
	base := startAPI(t, conn(t))

	get := func(path, traceparent string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		resp, err := admin(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	get("/api/v1/namespaces/default/pods", "")
	get("/api/v1/nodes", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	names := func() map[string]bool {
		out := map[string]bool{}
		for _, s := range exp.GetSpans() {
			out[s.Name] = true
		}
		return out
	}
	poll.Until(t, "a span of the read that sent a trace context", 10*time.Second, func() bool {
		return names()["GET /api/v1/nodes"]
	})
	if names()["GET /api/v1/namespaces/default/pods"] {
		t.Fatal("a read without a trace context got a span")
	}
}

// recordSpans installs a tracer provider that keeps spans in memory until
// the test ends.
func recordSpans(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{Service: "test", Exporters: []sdktrace.SpanExporter{exp}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	return exp
}
