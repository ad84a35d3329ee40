package bus

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// RetryRecords hold the reconcile runtime's retry state, one record per
// object and controller. They live apart from the objects so that
// recording a failure does not re-enqueue the key, and expire a day after
// their last write.
type RetryRecords struct {
	conn   *Conn
	prefix string
}

// RetryRecords opens (creating when needed) the retry records.
func (c *Conn) RetryRecords(ctx context.Context) (*RetryRecords, error) {
	if _, err := c.ensureBucket(ctx, bucketSpec{name: retryBucket, ttl: 24 * time.Hour, description: "homeostat retry state"}); err != nil {
		return nil, err
	}
	return &RetryRecords{conn: c, prefix: kvPrefix(retryBucket)}, nil
}

// RetryKey names the record of an object (resource and key; "-" for a
// controller over several kinds) in a controller.
func RetryKey(resource, key, controller string) string {
	return bucketName(resource) + "." + key + "." + controller
}

// Put writes a record.
func (r *RetryRecords) Put(ctx context.Context, recordKey string, data []byte) error {
	_, err := r.conn.publish(ctx, &nats.Msg{Subject: r.prefix + recordKey, Data: data})
	return translate(err)
}

// Delete removes a record.
func (r *RetryRecords) Delete(ctx context.Context, recordKey string) error {
	_, err := r.conn.publish(ctx, &nats.Msg{Subject: r.prefix + recordKey, Header: nats.Header{kvOp: []string{kvDel}}})
	return translate(err)
}

// Watch reports which records exist: each record key with whether it is
// there now, until ctx ends.
func (r *RetryRecords) Watch(ctx context.Context, fn func(recordKey string, exists bool)) error {
	spec := readSpec{stream: kvStream(retryBucket), filter: r.prefix + ">", headersOnly: true, what: "retry records"}
	return r.conn.read(ctx, spec, func(m rawMsg) error {
		if m.seq > 0 {
			fn(strings.TrimPrefix(m.subject, r.prefix), !isTombstone(m.header))
		}
		return nil
	})
}

// ForObject returns the records of one object, by controller.
func (r *RetryRecords) ForObject(ctx context.Context, resource, key string) (map[string]json.RawMessage, error) {
	prefix := bucketName(resource) + "." + key + "."
	out := map[string]json.RawMessage{}
	err := r.conn.read(ctx, readSpec{stream: kvStream(retryBucket), filter: r.prefix + prefix + "*", what: "retry records", tries: oneShotTries},
		func(m rawMsg) error {
			if m.seq > 0 {
				c := strings.TrimPrefix(m.subject, r.prefix+prefix)
				if isTombstone(m.header) {
					delete(out, c)
				} else {
					out[c] = json.RawMessage(m.data)
				}
			}
			if m.caughtUp {
				return errStopRead
			}
			return nil
		})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return out, err
}

// LastWriteTrace returns the trace context stored with the latest write of
// key: for an object applied by a user, the trace of that apply, which the
// reconciles it caused continue.
func (s *Store) LastWriteTrace(ctx context.Context, key string) (trace.SpanContext, error) {
	m, err := s.conn.lastMsg(ctx, s.stream(), s.subjPrefix+key)
	if err != nil {
		return trace.SpanContext{}, err
	}
	return extractSpan(m.header), nil
}
