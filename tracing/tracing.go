// Package tracing sets up OpenTelemetry for a Homeostat process: a tracer
// provider that always creates real trace and span ids (so that they can be
// shown and carried across writes), the W3C trace-context propagator, and
// exporters chosen by the standard OTEL_* environment variables. With none
// of those set, nothing is exported.
package tracing

import (
	"context"
	"errors"
	"os"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of every Homeostat span.
const Name = "github.com/homeostat/homeostat"

// Tracer returns Homeostat's tracer from the global provider.
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// Options tune Setup.
type Options struct {
	// Service names the process in traces (service.name), unless
	// OTEL_SERVICE_NAME says otherwise.
	Service string
	// Exporters are added to whatever the environment selects (tests use an
	// in-memory one). They are synchronous, so spans are there when a test looks.
	Exporters []sdktrace.SpanExporter
}

// Configured reports whether the environment asks for an exporter.
func Configured() bool {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

// Setup installs the global tracer provider and propagator and returns the
// function that flushes and stops them.
func Setup(ctx context.Context, opts Options) (func(context.Context) error, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(opts.Service)))
	if err != nil {
		return nil, err
	}
	if os.Getenv("OTEL_SERVICE_NAME") != "" {
		res = resource.Default()
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if Configured() {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, err
		}
		if !autoexport.IsNoneSpanExporter(exp) {
			popts = append(popts, sdktrace.WithBatcher(exp))
		}
	}
	for _, e := range opts.Exporters {
		popts = append(popts, sdktrace.WithSyncer(e))
	}
	tp := sdktrace.NewTracerProvider(popts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error {
		return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}, nil
}
