package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BucketSpec describes a key-value bucket Homeostat relies on.
type BucketSpec struct {
	Name string
	// TTL expires every value this long after its last write (events).
	TTL time.Duration
	// KeyTTL allows per-key time-to-live (leases); deletes by expiry leave a
	// marker that lives this long so that watchers see them.
	KeyTTL time.Duration
	// Description is stored with the bucket.
	Description string
}

// EnsureBucket creates the bucket, or opens it when it exists with a
// compatible configuration. Safe to call from many processes at once: the
// server treats an identical create as a no-op.
func (c *Conn) EnsureBucket(ctx context.Context, spec BucketSpec) (jetstream.KeyValue, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:         spec.Name,
		Description:    spec.Description,
		History:        1,
		TTL:            spec.TTL,
		Storage:        jetstream.FileStorage,
		Replicas:       c.replicas,
		LimitMarkerTTL: spec.KeyTTL,
	}
	kv, err := c.JS.CreateKeyValue(ctx, cfg)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketExists) && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil, fmt.Errorf("bus: create bucket %s: %w", spec.Name, err)
	}
	stream, serr := c.JS.Stream(ctx, "KV_"+spec.Name)
	if serr != nil {
		return nil, fmt.Errorf("bus: open bucket %s: %w", spec.Name, serr)
	}
	if diffs := bucketDiffs(stream.CachedInfo().Config, cfg); len(diffs) > 0 {
		return nil, fmt.Errorf("%w: bucket %s exists with %s; remove it or start with matching settings",
			ErrIncompatible, spec.Name, strings.Join(diffs, ", "))
	}
	return c.JS.KeyValue(ctx, spec.Name)
}

// bucketDiffs lists the settings of an existing bucket that differ from what
// this version needs. Cosmetic differences (description) are tolerated.
func bucketDiffs(have jetstream.StreamConfig, want jetstream.KeyValueConfig) []string {
	var d []string
	if have.MaxMsgsPerSubject != int64(want.History) {
		d = append(d, fmt.Sprintf("history %d (want %d)", have.MaxMsgsPerSubject, want.History))
	}
	if have.MaxAge != want.TTL {
		d = append(d, fmt.Sprintf("ttl %s (want %s)", have.MaxAge, want.TTL))
	}
	if have.Replicas != want.Replicas {
		d = append(d, fmt.Sprintf("replicas %d (want %d)", have.Replicas, want.Replicas))
	}
	if have.Storage != want.Storage {
		d = append(d, fmt.Sprintf("storage %s (want %s)", have.Storage, want.Storage))
	}
	if have.AllowMsgTTL != (want.LimitMarkerTTL > 0) {
		d = append(d, fmt.Sprintf("per-key ttl %t (want %t)", have.AllowMsgTTL, want.LimitMarkerTTL > 0))
	}
	return d
}
