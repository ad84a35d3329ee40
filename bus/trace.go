package bus

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Every write carries its writer's W3C trace context as message headers;
// above the bus it is a trace.SpanContext.

func injectTrace(ctx context.Context, hdr nats.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(hdr))
}

func injectSpan(sc trace.SpanContext, hdr nats.Header) {
	if sc.IsValid() {
		injectTrace(trace.ContextWithRemoteSpanContext(context.Background(), sc), hdr)
	}
}

func extractSpan(hdr nats.Header) trace.SpanContext {
	if len(hdr) == 0 {
		return trace.SpanContext{}
	}
	ctx := otel.GetTextMapPropagator().Extract(context.Background(), propagation.HeaderCarrier(hdr))
	return trace.SpanContextFromContext(ctx)
}

// WithSpan returns ctx continuing the trace of sc, when there is one.
func WithSpan(ctx context.Context, sc trace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
