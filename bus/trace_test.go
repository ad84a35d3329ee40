package bus

import (
	"context"
	"net/http"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A trace context written reads back whole, tracestate included, under
// the header names http.Header would give them; headers without one read
// as none.
func TestTraceHeadersRoundTrip(t *testing.T) {
	ts, err := trace.ParseTraceState("vendor=value,other=x")
	if err != nil {
		t.Fatal(err)
	}
	want := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
		Remote:     true,
	})
	hdr := nats.Header{}
	injectSpan(want, hdr)
	if got := extractSpan(hdr); !got.Equal(want) {
		t.Fatalf("extracted %+v, want %+v (headers %v)", got, want, hdr)
	}
	if len(hdr) != 2 || hdr.Get("Traceparent") == "" || hdr.Get("Tracestate") == "" {
		t.Fatalf("headers %v, want Traceparent and Tracestate", hdr)
	}
	// A context's baggage is not written: no reader takes it.
	member, err := baggage.NewMember("tenant", "a")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	withBag := nats.Header{}
	injectTrace(baggage.ContextWithBaggage(trace.ContextWithRemoteSpanContext(context.Background(), want), bag), withBag)
	if len(withBag) != 2 || withBag.Get("Traceparent") == "" {
		t.Fatalf("headers %v, want the trace context alone", withBag)
	}
	// As another writer's client would send them.
	std := http.Header{}
	propagation.TraceContext{}.Inject(trace.ContextWithRemoteSpanContext(context.Background(), want), propagation.HeaderCarrier(std))
	if got := extractSpan(nats.Header(std)); !got.Equal(want) {
		t.Fatalf("extracted %+v from %v, want %+v", got, std, want)
	}

	for name, hdr := range map[string]nats.Header{
		"none":        nil,
		"others only": {"Hs-Write": []string{"x"}},
		"malformed":   {"Traceparent": []string{"00-zz-01"}},
	} {
		if got := extractSpan(hdr); got.IsValid() {
			t.Errorf("%s: extracted %+v from %v, want none", name, got, hdr)
		}
	}
}

func TestTraceHeadersAsCarrier(t *testing.T) {
	h := traceHeaders(nats.Header{})
	h.Set("traceparent", "a")
	h.Set("X-Other", "b")
	if h.Get("traceparent") != "a" || h.Get("x-other") != "b" || h.Get("tracestate") != "" {
		t.Fatalf("carrier reads %v wrongly", h)
	}
	if len(h.Keys()) != 2 {
		t.Fatalf("keys %v", h.Keys())
	}
}
