package bus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/clock"
)

// bucketSpec describes a key-value bucket Homeostat relies on.
type bucketSpec struct {
	name string
	// ttl expires every value this long after its last write (events).
	ttl time.Duration
	// keyTTL allows per-key time-to-live (leases); deletes by expiry leave
	// a marker that lives this long so that watchers see them.
	keyTTL      time.Duration
	description string
	// confirmable: a bucket of objects, whose reads confirm their
	// revision (see confirm.go).
	confirmable bool
}

// ensureBucket creates the bucket, or opens it when it exists with a
// compatible configuration. Safe to call from many processes at once: the
// server treats an identical create as a no-op. While the bus cannot
// answer (no quorum yet after a restart) it keeps trying until ctx ends, so
// that a process becomes ready only once the streams it uses are there.
func (c *Conn) ensureBucket(ctx context.Context, spec bucketSpec) (jetstream.KeyValue, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:         spec.name,
		Description:    spec.description,
		History:        1,
		TTL:            spec.ttl,
		Storage:        jetstream.FileStorage,
		Replicas:       c.replicas,
		LimitMarkerTTL: spec.keyTTL,
	}
	var kv jetstream.KeyValue
	err := c.UntilAvailable(ctx, "bucket "+spec.name, func(ctx context.Context) error {
		if c.openOnly {
			var err error
			if kv, err = c.js.KeyValue(ctx, spec.name); err != nil {
				return notCreatedYet("bucket "+spec.name, err)
			}
			return c.guardBucket(ctx, spec)
		}
		_, err := c.js.CreateStream(ctx, bucketStream(cfg, spec))
		if err == nil {
			kv, err = c.js.KeyValue(ctx, spec.name)
			return madeNotFound("bucket "+spec.name, err)
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("bus: create bucket %s: %w", spec.name, translate(err))
		}
		stream, err := c.js.Stream(ctx, kvStream(spec.name))
		if err != nil {
			return madeNotFound("bucket "+spec.name, err)
		}
		if diffs := bucketDiffs(stream.CachedInfo().Config, cfg); len(diffs) > 0 {
			return fmt.Errorf("%w: bucket %s exists with %s; remove it or start with matching settings",
				ErrIncompatible, spec.name, strings.Join(diffs, ", "))
		}
		if kv, err = c.js.KeyValue(ctx, spec.name); err != nil {
			return madeNotFound("bucket "+spec.name, err)
		}
		return c.guardBucket(ctx, spec)
	})
	return kv, err
}

// bucketStream is the stream of a new bucket as the client library would
// make it for cfg, with its confirmation subject and rollups refused from
// the start (guarded): a bucket made and then updated had two API
// replicas starting together wait 5 s a bucket, the server answering
// neither the create nor the update made while it was in flight.
func bucketStream(cfg jetstream.KeyValueConfig, spec bucketSpec) jetstream.StreamConfig {
	duplicates := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < duplicates {
		duplicates = cfg.TTL
	}
	sc := jetstream.StreamConfig{
		Name: kvStream(cfg.Bucket), Description: cfg.Description, Subjects: []string{kvPrefix(cfg.Bucket) + ">"},
		MaxMsgsPerSubject: int64(max(cfg.History, 1)), MaxBytes: -1, MaxAge: cfg.TTL, MaxMsgSize: -1,
		Storage: cfg.Storage, Replicas: max(cfg.Replicas, 1), AllowRollup: true, DenyDelete: true,
		Duplicates: duplicates, MaxMsgs: -1, MaxConsumers: -1, AllowDirect: true, Discard: jetstream.DiscardNew,
		AllowMsgTTL: cfg.LimitMarkerTTL > 0, SubjectDeleteMarkerTTL: cfg.LimitMarkerTTL,
	}
	guarded(&sc, spec)
	return sc
}

// UntilAvailable runs op until it succeeds, fails for a reason other than
// an unavailable bus (ErrUnavailable), or ctx ends; each try gets a bounded
// time. Start-up steps use it to wait for a cluster that is still electing
// leaders instead of failing.
func (c *Conn) UntilAvailable(ctx context.Context, what string, op func(context.Context) error) error {
	pace := clock.Pace{First: 100 * time.Millisecond, Max: retryMax}
	for {
		octx, cancel := bounded(ctx)
		err := op(octx)
		cancel()
		if err == nil || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		c.log.Info("waiting for the bus", "for", what, "err", err)
		if !pace.Wait(ctx) {
			return err
		}
	}
}

// bucketDiffs lists the settings of an existing bucket that differ from what
// this version needs. Cosmetic differences (description) are tolerated.
func bucketDiffs(have jetstream.StreamConfig, want jetstream.KeyValueConfig) []string {
	var d []string
	if have.MaxMsgsPerSubject != int64(want.History) {
		d = append(d, fmt.Sprintf("history %d (want %d)", have.MaxMsgsPerSubject, want.History))
	}
	// How long values live may be changed (Retain); whether they expire
	// may not.
	if (have.MaxAge > 0) != (want.TTL > 0) {
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

// ensureStream creates a stream or brings an existing one to the
// configuration, refusing a change of retention, storage or replicas.
func (c *Conn) ensureStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	return c.UntilAvailable(ctx, "stream "+cfg.Name, func(ctx context.Context) error {
		if c.openOnly {
			_, err := c.js.Stream(ctx, cfg.Name)
			return notCreatedYet("stream "+cfg.Name, err)
		}
		_, err := c.js.CreateStream(ctx, cfg)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("bus: create stream %s: %w", cfg.Name, translate(err))
		}
		st, err := c.js.Stream(ctx, cfg.Name)
		if err != nil {
			return fmt.Errorf("bus: open stream %s: %w", cfg.Name, translate(err))
		}
		have := st.CachedInfo().Config
		if have.Retention != cfg.Retention || have.Storage != cfg.Storage || have.Replicas != cfg.Replicas {
			return fmt.Errorf("%w: stream %s exists with retention %s, storage %s, replicas %d (want %s, %s, %d)",
				ErrIncompatible, cfg.Name, have.Retention, have.Storage, have.Replicas, cfg.Retention, cfg.Storage, cfg.Replicas)
		}
		same := reflect.DeepEqual(have.Sources, cfg.Sources) && reflect.DeepEqual(have.Subjects, cfg.Subjects) &&
			(cfg.Duplicates == 0 || have.Duplicates == cfg.Duplicates) &&
			(cfg.MaxAge == 0 || have.MaxAge == cfg.MaxAge) && (cfg.MaxBytes == 0 || have.MaxBytes == cfg.MaxBytes) &&
			(cfg.MaxMsgsPerSubject == 0 || have.MaxMsgsPerSubject == cfg.MaxMsgsPerSubject)
		if same {
			return nil
		}
		if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("bus: update stream %s: %w", cfg.Name, translate(err))
		}
		return nil
	})
}

// openStream opens a stream as it is, creating it with cfg only when it
// does not exist and this connection may.
func (c *Conn) openStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	return c.UntilAvailable(ctx, "stream "+cfg.Name, func(ctx context.Context) error {
		_, err := c.js.Stream(ctx, cfg.Name)
		if err == nil || c.openOnly || !errors.Is(translate(err), ErrNotFound) {
			return notCreatedYet("stream "+cfg.Name, err)
		}
		if _, err := c.js.CreateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("bus: create stream %s: %w", cfg.Name, translate(err))
		}
		return nil
	})
}

// madeNotFound is err of a lookup of what, made just before or found made
// by another: a cluster places a new stream on its servers in turn, and
// one that has not yet answers "not found" for a moment (two replicas
// making the same buckets on a busy machine met it). That is waited out.
func madeNotFound(what string, err error) error {
	return waitedOut(what, "made, not yet found (the cluster is placing it)", err)
}

// notCreatedYet: a connection that may not create streams (a node's) waits
// for the control plane to create what it opens, as for a bus that is not
// answering yet.
func notCreatedYet(what string, err error) error {
	return waitedOut(what, "not created yet (the control plane creates it)", err)
}

// waitedOut is err, a lookup of what, as an ErrUnavailable saying why
// when it found nothing.
func waitedOut(what, why string, err error) error {
	err = translate(err)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("bus: %s: %w: %s", what, ErrUnavailable, why)
	}
	if err != nil {
		return fmt.Errorf("bus: open %s: %w", what, err)
	}
	return nil
}

// Retain brings how long the values of an expiring resource's bucket
// (Events) live after their last write to ttl.
func (c *Conn) Retain(ctx context.Context, resource string, ttl time.Duration) error {
	name := kvStream(bucketName(resource))
	return c.UntilAvailable(ctx, "stream "+name, func(ctx context.Context) error {
		st, err := c.js.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("bus: open stream %s: %w", name, translate(err))
		}
		cfg := st.CachedInfo().Config
		switch {
		case cfg.MaxAge == ttl:
			return nil
		case cfg.MaxAge == 0 || ttl <= 0:
			return fmt.Errorf("%w: %s does not expire its values; only an expiring bucket's time to live may change", ErrInvalid, resource)
		}
		cfg.MaxAge = ttl
		guarded(&cfg, bucketSpec{name: bucketName(resource), confirmable: true})
		if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("bus: update stream %s: %w", name, translate(err))
		}
		return nil
	})
}

// Retention is how long the values of a resource's bucket live after
// their last write (0: for ever).
func (c *Conn) Retention(ctx context.Context, resource string) (time.Duration, error) {
	info, err := c.leaderInfo(ctx, kvStream(bucketName(resource)), 0)
	if err != nil {
		return 0, err
	}
	return info.Config.MaxAge, nil
}
