package bus

import (
	"context"
	"net/textproto"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Every write carries its writer's W3C trace context as message headers;
// above the bus it is a trace.SpanContext.

// injectTrace writes ctx's trace context into hdr, by the W3C propagator
// alone: what extractSpan reads back (a context's baggage, which the
// global propagator would add, no reader takes from a change).
func injectTrace(ctx context.Context, hdr nats.Header) {
	propagation.TraceContext{}.Inject(ctx, traceHeaders(hdr))
}

func injectSpan(sc trace.SpanContext, hdr nats.Header) {
	if sc.IsValid() {
		injectTrace(trace.ContextWithRemoteSpanContext(context.Background(), sc), hdr)
	}
}

// extractSpan reads the trace context alone: the bus keeps no baggage, so
// the W3C propagator is asked directly rather than through the global
// composite, and its headers are looked up by the canonical names Inject
// wrote, not canonicalized on each read. Every watcher does this for
// every change it reads, in a process that set no global propagator too
// (the global one was a no-op there).
func extractSpan(hdr nats.Header) trace.SpanContext {
	if len(hdr) == 0 {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), traceHeaders(hdr))
	return trace.SpanContextFromContext(ctx)
}

// traceHeaders is a message's headers as the propagator's carrier.
type traceHeaders nats.Header

func (h traceHeaders) Get(key string) string {
	if v := h[canonicalTraceKey(key)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h traceHeaders) Set(key, value string) { h[canonicalTraceKey(key)] = []string{value} }

func (h traceHeaders) Keys() []string { return propagation.HeaderCarrier(h).Keys() }

// canonicalTraceKey is http.Header's form of key, without working it out
// for the two names the propagator asks for on every change.
func canonicalTraceKey(key string) string {
	switch key {
	case "traceparent":
		return "Traceparent"
	case "tracestate":
		return "Tracestate"
	}
	return textproto.CanonicalMIMEHeaderKey(key)
}

// WithSpan returns ctx continuing the trace of sc, when there is one.
func WithSpan(ctx context.Context, sc trace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
