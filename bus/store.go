package bus

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/homeostat/homeostat/object"
)

// Message headers Homeostat adds to the writes it makes.
const (
	// HeaderOp marks the write that created a key, so that watchers can tell
	// ADDED from MODIFIED without keeping state.
	HeaderOp = "Homeostat-Op"
	opCreate = "create"
	kvOp     = "KV-Operation"
	kvDel    = "DEL"
	kvPurge  = "PURGE"
)

// StoreSpec describes the bucket that holds one kind.
type StoreSpec struct {
	Bucket     string
	Namespaced bool
	// TTL expires objects this long after their last write (events).
	TTL time.Duration
}

// Store is the object store of one kind: one key-value bucket whose keys are
// namespace.name (or name), whose values are objects in JSON, and whose
// revisions are the objects' resourceVersions. It is safe for concurrent use.
type Store struct {
	conn       *Conn
	kv         jetstream.KeyValue
	spec       StoreSpec
	subjPrefix string
	meta       jetstream.KeyValue
	now        func() time.Time
}

// metaBucket holds the store's own bookkeeping (compaction revisions).
const metaBucket = "hs_meta"

// Store opens (creating when needed) the store for a kind. Stores are cached
// per bucket, so every caller shares one.
func (c *Conn) Store(ctx context.Context, spec StoreSpec) (*Store, error) {
	c.mu.Lock()
	s, ok := c.stores[spec.Bucket]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	kv, err := c.EnsureBucket(ctx, BucketSpec{Name: spec.Bucket, TTL: spec.TTL})
	if err != nil {
		return nil, err
	}
	meta, err := c.EnsureBucket(ctx, BucketSpec{Name: metaBucket, Description: "homeostat bookkeeping"})
	if err != nil {
		return nil, err
	}
	s = &Store{conn: c, kv: kv, spec: spec, subjPrefix: "$KV." + spec.Bucket + ".", meta: meta, now: time.Now}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stores[spec.Bucket]; ok {
		return prev, nil
	}
	c.stores[spec.Bucket] = s
	return s, nil
}

// DropStore deletes a kind's bucket and everything in it.
func (c *Conn) DropStore(ctx context.Context, bucket string) error {
	c.mu.Lock()
	delete(c.stores, bucket)
	c.mu.Unlock()
	err := c.JS.DeleteKeyValue(ctx, bucket)
	if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bus: drop %s: %w", bucket, err)
	}
	return nil
}

// Bucket names the store's bucket.
func (s *Store) Bucket() string { return s.spec.Bucket }

// Stream names the JetStream stream behind the bucket.
func (s *Store) Stream() string { return "KV_" + s.spec.Bucket }

// Subject is the subject a key's writes are published on.
func (s *Store) Subject(key string) string { return s.subjPrefix + key }

// Namespaced reports whether keys carry a namespace.
func (s *Store) Namespaced() bool { return s.spec.Namespaced }

// Revision parses a resourceVersion.
func Revision(rv string) (uint64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: resourceVersion %q is not a revision number", ErrInvalid, rv)
	}
	return n, nil
}

func (s *Store) decode(key string, data []byte, rev uint64) (*object.Object, error) {
	var o object.Object
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("bus: %s/%s holds undecodable data at revision %d: %w", s.spec.Bucket, key, rev, err)
	}
	o.Metadata.ResourceVersion = strconv.FormatUint(rev, 10)
	return &o, nil
}

func encode(o *object.Object) ([]byte, error) {
	c := *o
	c.Metadata.ResourceVersion = ""
	return json.Marshal(&c)
}

// Get reads the latest version of a key.
func (s *Store) Get(ctx context.Context, key string) (*object.Object, error) {
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Bucket, key, translate(err))
	}
	return s.decode(key, e.Value(), e.Revision())
}

// publish writes data to key if the key's last revision is still expect.
func (s *Store) publish(ctx context.Context, key string, data []byte, expect uint64, hdr nats.Header) (uint64, error) {
	if hdr == nil {
		hdr = nats.Header{}
	}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(hdr))
	msg := &nats.Msg{Subject: s.subjPrefix + key, Header: hdr, Data: data}
	ack, err := s.conn.JS.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(expect))
	if err != nil {
		return 0, translate(err)
	}
	return ack.Sequence, nil
}

// Create stores a new object. It fills uid, creationTimestamp and
// generation, and a name from generateName when the name is empty. It fails
// with ErrAlreadyExists when the key is taken.
func (s *Store) Create(ctx context.Context, o *object.Object) (*object.Object, error) {
	n := o.Clone()
	if n.Metadata.Name == "" && n.Metadata.GenerateName != "" {
		n.Metadata.Name = n.Metadata.GenerateName + randomSuffix()
	}
	if n.Metadata.Name == "" {
		return nil, fmt.Errorf("%w: metadata.name is required", ErrInvalid)
	}
	if s.spec.Namespaced != (n.Metadata.Namespace != "") {
		return nil, fmt.Errorf("%w: metadata.namespace must be %s for %s", ErrInvalid,
			map[bool]string{true: "set", false: "empty"}[s.spec.Namespaced], s.spec.Bucket)
	}
	n.Metadata.UID = uuid.NewString()
	n.Metadata.CreationTimestamp = s.now().UTC().Truncate(time.Second)
	n.Metadata.Generation = 1
	n.Metadata.DeletionTimestamp = nil
	n.Metadata.DeletionGracePeriodSeconds = nil
	data, err := encode(n)
	if err != nil {
		return nil, err
	}
	key := n.Key()
	hdr := nats.Header{HeaderOp: []string{opCreate}}
	rev, err := s.publish(ctx, key, data, 0, hdr)
	if errors.Is(err, ErrConflict) {
		// The key has a history: reuse it only if its last entry is a tombstone.
		var last uint64
		last, err = s.tombstoneRevision(ctx, key)
		if err == nil {
			rev, err = s.publish(ctx, key, data, last, nats.Header{HeaderOp: []string{opCreate}})
		}
		if errors.Is(err, ErrConflict) {
			err = ErrAlreadyExists
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Bucket, key, err)
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(rev, 10)
	return n, nil
}

// createOver creates n (already filled in) over a tombstone, or reports
// ErrAlreadyExists when the key holds a live object.
func (s *Store) createOver(ctx context.Context, n *object.Object) (*object.Object, error) {
	last, err := s.tombstoneRevision(ctx, n.Key())
	if err != nil {
		return nil, err
	}
	data, err := encode(n)
	if err != nil {
		return nil, err
	}
	rev, err := s.publish(ctx, n.Key(), data, last, nats.Header{HeaderOp: []string{opCreate}})
	if errors.Is(err, ErrConflict) {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Bucket, n.Key(), ErrAlreadyExists)
	}
	if err != nil {
		return nil, err
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(rev, 10)
	return n, nil
}

// tombstoneRevision returns the revision of the delete marker a key ends
// with, or ErrAlreadyExists when it holds a live value.
func (s *Store) tombstoneRevision(ctx context.Context, key string) (uint64, error) {
	msg, err := s.lastMsg(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if op := msg.Header.Get(kvOp); op == kvDel || op == kvPurge || msg.Header.Get(jetstream.MarkerReasonHeader) != "" {
		return msg.Sequence, nil
	}
	return 0, ErrAlreadyExists
}

func (s *Store) lastMsg(ctx context.Context, key string) (*jetstream.RawStreamMsg, error) {
	stream, err := s.conn.JS.Stream(ctx, s.Stream())
	if err != nil {
		return nil, translate(err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, s.subjPrefix+key)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, ErrNotFound
		}
		return nil, translate(err)
	}
	return msg, nil
}

// UpdateOptions tune Update.
type UpdateOptions struct {
	// Current is the stored version the caller read, at the revision named
	// by the new object's resourceVersion; given, it saves a read.
	Current *object.Object
}

// Update replaces an object if its resourceVersion is still the latest
// revision; otherwise it fails with ErrConflict. It keeps uid and
// creationTimestamp, moves generation when spec changes, keeps a deletion
// once requested, and removes the object when a deleting object loses its
// last finalizer.
func (s *Store) Update(ctx context.Context, o *object.Object, opts UpdateOptions) (*object.Object, error) {
	rev, err := Revision(o.Metadata.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if rev == 0 {
		return nil, fmt.Errorf("%w: metadata.resourceVersion is required for an update", ErrInvalid)
	}
	key := o.Key()
	cur := opts.Current
	if cur == nil || cur.Metadata.ResourceVersion != o.Metadata.ResourceVersion {
		if cur, err = s.Get(ctx, key); err != nil {
			return nil, err
		}
	}
	if cur.Metadata.ResourceVersion != o.Metadata.ResourceVersion {
		return nil, fmt.Errorf("%s %q: %w (have %s, latest %s)", s.spec.Bucket, key, ErrConflict,
			o.Metadata.ResourceVersion, cur.Metadata.ResourceVersion)
	}
	n := o.Clone()
	n.Metadata.UID = cur.Metadata.UID
	n.Metadata.CreationTimestamp = cur.Metadata.CreationTimestamp
	n.Metadata.GenerateName = cur.Metadata.GenerateName
	n.Metadata.DeletionTimestamp = cur.Metadata.DeletionTimestamp
	n.Metadata.DeletionGracePeriodSeconds = cur.Metadata.DeletionGracePeriodSeconds
	n.Metadata.Generation = cur.Metadata.Generation
	if !object.SameJSON(cur.Spec, n.Spec) {
		n.Metadata.Generation++
	}
	if n.Metadata.Deleting() && len(cur.Metadata.Finalizers) > 0 && len(n.Metadata.Finalizers) == 0 {
		return s.remove(ctx, n, rev)
	}
	data, err := encode(n)
	if err != nil {
		return nil, err
	}
	// A write that changes nothing is not made: no new revision, no
	// watch event, no reconcile.
	if old, err := encode(cur); err == nil && object.SameJSON(old, data) {
		return cur, nil
	}
	nrev, err := s.publish(ctx, key, data, rev, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Bucket, key, err)
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(nrev, 10)
	return n, nil
}

// remove writes a tombstone that carries the object's last state, so that
// watchers see what was deleted (and who owned it).
func (s *Store) remove(ctx context.Context, o *object.Object, rev uint64) (*object.Object, error) {
	n := o.Clone()
	if n.Metadata.DeletionTimestamp == nil {
		t := s.now().UTC().Truncate(time.Second)
		n.Metadata.DeletionTimestamp = &t
	}
	data, err := encode(n)
	if err != nil {
		return nil, err
	}
	hdr := nats.Header{kvOp: []string{kvDel}}
	nrev, err := s.publish(ctx, n.Key(), data, rev, hdr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Bucket, n.Key(), err)
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(nrev, 10)
	return n, nil
}

// DeleteOptions tune Delete.
type DeleteOptions struct {
	// Revision, when set, must be the object's latest revision.
	Revision uint64
	// UID, when set, must be the object's uid (guards against a recreated name).
	UID string
	// GracePeriodSeconds > 0 marks the object for graceful deletion: it
	// stays, with deletionTimestamp set, until its owner of the process
	// (the node agent) deletes it with a zero grace period.
	GracePeriodSeconds *int64
}

// Delete removes an object, or marks it for deletion when it has
// finalizers or a grace period. It returns the object as it now stands and
// whether it is gone. Without a Revision precondition a concurrent write is
// retried; with one, it is a conflict.
func (s *Store) Delete(ctx context.Context, key string, opts DeleteOptions) (*object.Object, bool, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.Get(ctx, key)
		if err != nil {
			return nil, false, err
		}
		o, gone, err := s.deleteOnce(ctx, cur, opts)
		if errors.Is(err, ErrConflict) && opts.Revision == 0 && attempt < 10 {
			continue
		}
		return o, gone, err
	}
}

func (s *Store) deleteOnce(ctx context.Context, cur *object.Object, opts DeleteOptions) (*object.Object, bool, error) {
	rev, err := Revision(cur.Metadata.ResourceVersion)
	if err != nil {
		return nil, false, err
	}
	if opts.Revision != 0 && opts.Revision != rev {
		return nil, false, fmt.Errorf("%s %q: %w (precondition revision %d, latest %d)",
			s.spec.Bucket, cur.Key(), ErrConflict, opts.Revision, rev)
	}
	if opts.UID != "" && opts.UID != cur.Metadata.UID {
		return nil, false, fmt.Errorf("%s %q: %w (precondition uid %s, stored %s)",
			s.spec.Bucket, cur.Key(), ErrConflict, opts.UID, cur.Metadata.UID)
	}
	graceful := opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds > 0
	if len(cur.Metadata.Finalizers) == 0 && !graceful {
		o, err := s.remove(ctx, cur, rev)
		return o, err == nil, err
	}
	if cur.Metadata.Deleting() {
		return cur, false, nil
	}
	n := cur.Clone()
	t := s.now().UTC().Truncate(time.Second)
	if graceful {
		t = t.Add(time.Duration(*opts.GracePeriodSeconds) * time.Second)
		g := *opts.GracePeriodSeconds
		n.Metadata.DeletionGracePeriodSeconds = &g
	}
	n.Metadata.DeletionTimestamp = &t
	data, err := encode(n)
	if err != nil {
		return nil, false, err
	}
	nrev, err := s.publish(ctx, n.Key(), data, rev, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%s %q: %w", s.spec.Bucket, n.Key(), err)
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(nrev, 10)
	return n, false, nil
}

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// randomSuffix gives generateName its five characters, from the alphabet
// Kubernetes uses (no vowels, so no words).
func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = suffixAlphabet[int(b[i])%len(suffixAlphabet)]
	}
	return string(b)
}

// CreateMany creates objects with pipelined (asynchronous) publishes, which
// is several times faster than one Create after another, and returns one
// error (nil, ErrAlreadyExists, …) per object.
func (s *Store) CreateMany(ctx context.Context, objs []*object.Object) ([]*object.Object, []error) {
	out := make([]*object.Object, len(objs))
	errs := make([]error, len(objs))
	futures := make([]jetstream.PubAckFuture, len(objs))
	for i, o := range objs {
		n := o.Clone()
		if n.Metadata.Name == "" && n.Metadata.GenerateName != "" {
			n.Metadata.Name = n.Metadata.GenerateName + randomSuffix()
		}
		n.Metadata.UID = uuid.NewString()
		n.Metadata.CreationTimestamp = s.now().UTC().Truncate(time.Second)
		n.Metadata.Generation = 1
		n.Metadata.DeletionTimestamp, n.Metadata.DeletionGracePeriodSeconds = nil, nil
		data, err := encode(n)
		if err != nil {
			errs[i] = err
			continue
		}
		hdr := nats.Header{HeaderOp: []string{opCreate}}
		otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(hdr))
		msg := &nats.Msg{Subject: s.subjPrefix + n.Key(), Header: hdr, Data: data}
		f, err := s.conn.JS.PublishMsgAsync(msg, jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			errs[i] = translate(err)
			continue
		}
		out[i], futures[i] = n, f
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			out[i].Metadata.ResourceVersion = strconv.FormatUint(ack.Sequence, 10)
		case err := <-f.Err():
			if !errors.Is(translate(err), ErrConflict) {
				out[i], errs[i] = nil, translate(err)
				continue
			}
			// Taken, or a key with history (a tombstone) to create over.
			out[i], errs[i] = s.createOver(ctx, out[i])
		case <-ctx.Done():
			errs[i] = ctx.Err()
		}
	}
	return out, errs
}
