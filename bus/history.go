package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The reconcile history is a stream of entries, one per reconcile of an
// object, one subject per object (hist.<bucket>.<key>), so that one
// object's entries are read without the others'. It is bounded per object
// by count and overall by age and size: an object reconciled in a loop
// keeps its latest entries, and a busy cluster keeps its latest days.
const (
	historyStream = "HS_HISTORY"
	historyPrefix = "hist."
)

// HistoryOptions bound the reconcile history.
type HistoryOptions struct {
	// MaxAge is how long entries are kept (7 days when zero).
	MaxAge time.Duration
	// PerObject is how many entries each object keeps (100 when zero).
	PerObject int64
	// MaxBytes caps the stream; the oldest entries go first (1 GiB when
	// zero).
	MaxBytes int64
}

// DefaultHistoryMaxAge is how long the reconcile history (and, by
// default, Events) is kept.
const DefaultHistoryMaxAge = 7 * 24 * time.Hour

func (o HistoryOptions) withDefaults() HistoryOptions {
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultHistoryMaxAge
	}
	if o.PerObject <= 0 {
		o.PerObject = 100
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 30
	}
	return o
}

// History appends and reads reconcile history entries.
type History struct{ conn *Conn }

// History opens the history stream. With bounds, it creates the stream
// or brings it to them (the API does, through Provision); with none (the
// zero HistoryOptions), it leaves an existing stream's bounds alone and
// creates a missing one with the defaults, or, on a connection that may
// not manage streams, waits for it to exist.
func (c *Conn) History(ctx context.Context, opts HistoryOptions) (*History, error) {
	keep := opts == HistoryOptions{}
	opts = opts.withDefaults()
	cfg := jetstream.StreamConfig{
		Name: historyStream, Description: "homeostat reconcile history", Subjects: []string{historyPrefix + ">"},
		MaxAge: opts.MaxAge, MaxMsgsPerSubject: opts.PerObject, MaxBytes: opts.MaxBytes,
		Storage: jetstream.FileStorage, Replicas: c.replicas, Discard: jetstream.DiscardOld,
	}
	var err error
	if keep {
		err = c.openStream(ctx, cfg)
	} else {
		err = c.ensureStream(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	return &History{conn: c}, nil
}

func historySubject(resource, key string) string {
	return historyPrefix + bucketName(resource) + "." + key
}

// Append hands one entry of an object (resource and key) to the
// connection and returns without waiting for the store's answer; it waits
// only while the connection already has a full window of publishes
// unanswered. An entry held while the connection is down is sent once it
// is back.
func (h *History) Append(resource, key string, data []byte) error {
	if !validKey(key) {
		return nil // no object has such a key; nothing to record it under
	}
	return h.conn.handOver(historyStream, &nats.Msg{Subject: historySubject(resource, key), Data: data},
		jetstream.WithStallWait(requestTimeout))
}

// Read calls fn with the entries of an object stored at or after since
// (all when zero), oldest first, until the last one stored when the read
// began, or until fn returns an error, which Read returns.
func (h *History) Read(ctx context.Context, resource, key string, since time.Time, fn func(data []byte) error) error {
	if !validKey(key) {
		return nil
	}
	return h.conn.readSince(ctx, readSpec{stream: historyStream, filter: historySubject(resource, key),
		what: "history of " + resource + " " + key, tries: oneShotTries}, since, fn)
}
