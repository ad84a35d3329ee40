package bus

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// RetryBucket holds the reconcile runtime's retry records, one per object
// and controller, keyed <bucket>.<object key>.<controller>. It is separate
// from the objects so that recording a failure does not re-enqueue the key.
const RetryBucket = "hs_reconcile"

// RetryKey is the record key of an object in a controller.
func RetryKey(bucket, key, controller string) string { return bucket + "." + key + "." + controller }

// RetryRecords returns the raw retry records of one object, by controller.
func (s *Store) RetryRecords(ctx context.Context, key string) (map[string]json.RawMessage, error) {
	kv, err := s.conn.JS.KeyValue(ctx, RetryBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	prefix := s.spec.Bucket + "." + key + "."
	w, err := kv.Watch(ctx, prefix+"*")
	if err != nil {
		return nil, translate(err)
	}
	defer func() { _ = w.Stop() }()
	out := map[string]json.RawMessage{}
	for e := range w.Updates() {
		if e == nil {
			break
		}
		if e.Operation() == jetstream.KeyValuePut {
			out[strings.TrimPrefix(e.Key(), prefix)] = json.RawMessage(e.Value())
		}
	}
	return out, nil
}

// LastWriteTrace returns the trace context stored with the latest write of
// key: for an object applied by a user, the trace of that apply, which the
// reconciles it caused continue.
func (s *Store) LastWriteTrace(ctx context.Context, key string) (trace.SpanContext, error) {
	msg, err := s.lastMsg(ctx, key)
	if err != nil {
		return trace.SpanContext{}, err
	}
	hdr := nats.Header(msg.Header)
	c := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(hdr))
	return trace.SpanContextFromContext(c), nil
}
