package tracing

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Span is a recorded span as stored and served: enough to draw the tree of
// a trace and say what each step did.
type Span struct {
	TraceID    string            `json:"traceID"`
	SpanID     string            `json:"spanID"`
	ParentID   string            `json:"parentID,omitempty"`
	Name       string            `json:"name"`
	Service    string            `json:"service"`
	Start      time.Time         `json:"start"`
	End        time.Time         `json:"end"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Error      string            `json:"error,omitempty"`
}

// Sink stores spans; package bus provides one. Declared here, where it is used.
type Sink interface {
	PublishSpan(ctx context.Context, traceID string, data []byte) error
}

// storeExporter writes spans to a Sink.
type storeExporter struct {
	sink    Sink
	service string
}

// ExportSpans encodes and stores each span.
func (e *storeExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	for _, s := range spans {
		sp := Span{
			TraceID: s.SpanContext().TraceID().String(), SpanID: s.SpanContext().SpanID().String(),
			Name: s.Name(), Service: e.service, Start: s.StartTime(), End: s.EndTime(),
		}
		if s.Parent().IsValid() {
			sp.ParentID = s.Parent().SpanID().String()
		}
		if attrs := s.Attributes(); len(attrs) > 0 {
			sp.Attributes = map[string]string{}
			for _, a := range attrs {
				sp.Attributes[string(a.Key)] = a.Value.String()
			}
		}
		if s.Status().Description != "" {
			sp.Error = s.Status().Description
		}
		b, err := json.Marshal(sp)
		if err != nil {
			return err
		}
		if err := e.sink.PublishSpan(ctx, sp.TraceID, b); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown has nothing to release.
func (e *storeExporter) Shutdown(context.Context) error { return nil }

// Record adds sink to the installed tracer provider, so that `homeostat
// trace` can show this process's spans. It is a no-op before Setup.
func Record(service string, sink Sink) {
	if tp, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
		tp.RegisterSpanProcessor(sdktrace.NewBatchSpanProcessor(&storeExporter{sink: sink, service: service},
			sdktrace.WithBatchTimeout(time.Second)))
	}
}
