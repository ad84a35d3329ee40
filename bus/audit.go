package bus

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The audit log is a stream of records, one subject per verb, kept for a
// bounded age and size: a record is appended with the request's id, so a
// retried append is stored once.
const (
	auditStream = "HS_AUDIT"
	auditPrefix = "audit."
)

// AuditOptions bound the audit log.
type AuditOptions struct {
	// MaxAge is how long records are kept (7 days when zero).
	MaxAge time.Duration
	// MaxBytes caps the stream; the oldest records go first (1 GiB when
	// zero).
	MaxBytes int64
}

// AuditLog appends and reads audit records.
type AuditLog struct{ conn *Conn }

// AuditLog opens (creating or re-bounding when needed) the audit stream.
func (c *Conn) AuditLog(ctx context.Context, opts AuditOptions) (*AuditLog, error) {
	if opts.MaxAge <= 0 {
		opts.MaxAge = 7 * 24 * time.Hour
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 30
	}
	err := c.ensureStream(ctx, jetstream.StreamConfig{
		Name: auditStream, Description: "homeostat audit records", Subjects: []string{auditPrefix + ">"},
		MaxAge: opts.MaxAge, MaxBytes: opts.MaxBytes, Storage: jetstream.FileStorage, Replicas: c.replicas,
		Discard: jetstream.DiscardOld, Duplicates: 2 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	return &AuditLog{conn: c}, nil
}

// Append stores one record of a request with this verb and id.
func (a *AuditLog) Append(ctx context.Context, verb, id string, data []byte) error {
	_, err := a.conn.publish(ctx, &nats.Msg{Subject: auditPrefix + subjectToken(verb), Data: data}, jetstream.WithMsgID(id))
	return err
}

// AppendAsync hands one record to the connection and returns without
// waiting for the store: for a refused or failed request, which changed
// nothing and must not wait out an unavailable store. A record held while
// the connection is down is sent once it is back.
func (a *AuditLog) AppendAsync(verb, id string, data []byte) error {
	return a.conn.handOver(auditStream, &nats.Msg{Subject: auditPrefix + subjectToken(verb), Data: data}, jetstream.WithMsgID(id))
}

// Read calls fn with every record stored since the given time (all when
// zero), of the verb when one is given, oldest first, until the last one
// stored when the read began, or until fn returns an error, which Read
// returns.
func (a *AuditLog) Read(ctx context.Context, verb string, since time.Time, fn func(data []byte) error) error {
	filter := auditPrefix + ">"
	if verb != "" {
		filter = auditPrefix + subjectToken(verb)
	}
	return a.conn.readSince(ctx, readSpec{stream: auditStream, filter: filter, what: "audit records", tries: oneShotTries}, since, fn)
}

// readSince calls fn with the data of every message of spec stored at or
// after since (all when zero), oldest first, until the last one stored
// when the read began, or until fn returns an error, which it returns.
func (c *Conn) readSince(ctx context.Context, spec readSpec, since time.Time, fn func(data []byte) error) error {
	spec.start, spec.startTime = 1, since
	if !since.IsZero() {
		spec.start = 0
	}
	var fnErr error
	err := c.read(ctx, spec, func(m rawMsg) error {
		if m.seq > 0 {
			if fnErr = fn(m.data); fnErr != nil {
				return errStopRead
			}
		}
		if m.caughtUp {
			return errStopRead
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// subjectToken makes s one subject token: the characters NATS gives a
// meaning to are replaced.
func subjectToken(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '*' || r == '>' || r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}
