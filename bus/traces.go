package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Spans recorded by Homeostat's own processes are kept for an hour in a
// stream, one subject per trace, so that `homeostat trace` can show the
// tree of one apply with nothing else installed.
const (
	tracesStream = "HS_TRACES"
	tracesPrefix = "traces."
	traceMaxAge  = time.Hour
)

// SpanSink publishes recorded spans; it is what the tracing package's
// store exporter writes to.
type SpanSink struct{ conn *Conn }

// SpanSink opens (creating when needed) the span stream.
func (c *Conn) SpanSink(ctx context.Context) (*SpanSink, error) {
	err := c.ensureStream(ctx, jetstream.StreamConfig{
		Name: tracesStream, Description: "homeostat recorded spans", Subjects: []string{tracesPrefix + ">"},
		MaxAge: traceMaxAge, Storage: jetstream.FileStorage, Replicas: c.replicas, Discard: jetstream.DiscardOld,
		MaxBytes: 256 << 20,
	})
	if err != nil {
		return nil, err
	}
	return &SpanSink{conn: c}, nil
}

// PublishSpan stores one encoded span of traceID.
func (s *SpanSink) PublishSpan(_ context.Context, traceID string, data []byte) error {
	return s.conn.handOver(tracesStream, &nats.Msg{Subject: tracesPrefix + traceID, Data: data})
}

// Spans returns the stored spans of a trace.
func (s *SpanSink) Spans(ctx context.Context, traceID string) ([][]byte, error) {
	var out [][]byte
	err := s.conn.read(ctx, readSpec{stream: tracesStream, filter: tracesPrefix + traceID, start: 1, what: "trace " + traceID, tries: oneShotTries},
		func(m rawMsg) error {
			if m.seq > 0 {
				out = append(out, m.data)
			}
			if m.caughtUp {
				return errStopRead
			}
			return nil
		})
	return out, err
}
