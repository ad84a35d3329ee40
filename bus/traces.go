package bus

import (
	"context"
	"fmt"
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
	_, err := s.conn.JS.PublishMsgAsync(&nats.Msg{Subject: tracesPrefix + traceID, Data: data})
	return translate(err)
}

// Spans returns the stored spans of a trace.
func (s *SpanSink) Spans(ctx context.Context, traceID string) ([][]byte, error) {
	cons, err := s.conn.JS.OrderedConsumer(ctx, tracesStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{tracesPrefix + traceID}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, translate(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, translate(err)
	}
	var out [][]byte
	for remaining := info.NumPending; remaining > 0; {
		batch, err := cons.Fetch(int(min(remaining, 1000)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, translate(err)
		}
		n := uint64(0)
		for m := range batch.Messages() {
			out = append(out, m.Data())
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: reading trace %s", ErrUnavailable, traceID)
		}
		remaining -= n
	}
	return out, nil
}
