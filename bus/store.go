package bus

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/object"
)

// Message headers Homeostat adds to the writes it makes.
const (
	// HeaderOp marks the write that created a key, so that watchers can tell
	// ADDED from MODIFIED without keeping state, and a write that changed
	// the status alone, so that those who act on the rest can pass over it
	// undecoded (WatchOptions.SkipStatus).
	HeaderOp = "Homeostat-Op"
	opCreate = "create"
	opStatus = "status"
	// headerBy names, on a write of the status alone, the Author its
	// context holds, so that the author can pass over its own write when
	// it comes back (Event.StatusBy).
	headerBy = "Homeostat-Status-By"
	// headerLayout says where a value's parts lie in it (object.Layout),
	// so that its readers decode its metadata alone.
	headerLayout = "Homeostat-Layout"
	// headerHead, on an update that left the object's head as it was
	// (object.SameHead), names the revision it wrote over and the new
	// generation ("rev,generation"), so that a reader holding that
	// revision takes the head from it instead of decoding it again
	// (WatchOptions.Prior). Its own header, not the server's
	// Nats-Expected-Last-Subject-Sequence: that one says what the write
	// was conditioned on, not that the head stayed, and a stream that
	// sources another drops it.
	headerHead = "Homeostat-Head"
	// subresourceStatus names a write of the status alone to a field
	// tracker, as the status subresource would take it.
	subresourceStatus = "status"
	kvOp              = "KV-Operation"
	kvDel             = "DEL"
	kvPurge           = "PURGE"
)

// StoreSpec describes the store of one kind.
type StoreSpec struct {
	// Resource names the kind as Kubernetes does: "pods",
	// "replicasets.apps", "widgets.example.com".
	Resource string
	// Kind, when set, is the kind every stored object must have.
	Kind       string
	Namespaced bool
	// TTL expires objects this long after their last write (events).
	TTL time.Duration
}

// Store is the object store of one kind: one key-value bucket whose keys are
// namespace.name (or name), whose values are objects in JSON, and whose
// revisions are the objects' resourceVersions. It is safe for concurrent use.
type Store struct {
	conn       *Conn
	spec       StoreSpec
	bucket     string
	subjPrefix string
	now        func() time.Time
	shared     *sharedObjects
	pages      pagedKeys

	fanMu sync.Mutex
	fan   *fanout // serves shared watches that resume; nil when none runs
}

// Store opens (creating when needed) the store for a kind. Stores are cached
// per resource, so every caller shares one.
func (c *Conn) Store(ctx context.Context, spec StoreSpec) (*Store, error) {
	if spec.Resource == "" {
		return nil, fmt.Errorf("%w: StoreSpec.Resource is required", ErrInvalid)
	}
	c.mu.Lock()
	s, ok := c.stores[spec.Resource]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	bucket := bucketName(spec.Resource)
	if _, err := c.ensureBucket(ctx, bucketSpec{name: bucket, ttl: spec.TTL, confirmable: true}); err != nil {
		return nil, err
	}
	if _, err := c.ensureBucket(ctx, bucketSpec{name: metaBucket, description: "homeostat bookkeeping"}); err != nil {
		return nil, err
	}
	s = &Store{conn: c, spec: spec, bucket: bucket, subjPrefix: kvPrefix(bucket), now: time.Now, shared: c.decoded.of(bucket)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stores[spec.Resource]; ok {
		return prev, nil
	}
	c.stores[spec.Resource] = s
	return s, nil
}

// Resource names the store's kind.
func (s *Store) Resource() string { return s.spec.Resource }

func (s *Store) stream() string { return kvStream(s.bucket) }

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

// decode reads a stored value as the object of key. A value that is not
// one (undecodable, null, naming another object or kind) is a
// *CorruptError: nothing above the bus ever sees it as an object. A
// value read by its layout l has its metadata decoded and its other
// parts checked only for where they lie: their writer, the bus, wrote
// them valid.
func (s *Store) decode(key string, data []byte, rev uint64, l object.Layout) (*object.Object, error) {
	bad := func(format string, args ...any) error {
		return &CorruptError{Resource: s.spec.Resource, Key: key, Revision: rev, Reason: fmt.Sprintf(format, args...)}
	}
	var o *object.Object
	var err error
	if l != (object.Layout{}) {
		o, err = object.DecodeLayout(data, l)
	} else {
		o, err = object.Decode(data)
	}
	if err != nil {
		return nil, bad("not JSON: %v", err)
	}
	if o == nil {
		return nil, bad("the value is null")
	}
	ns, name := object.SplitKey(key, s.spec.Namespaced)
	switch {
	case o.Metadata.Name != name:
		return nil, bad("metadata.name is %q, not %q", o.Metadata.Name, name)
	case o.Metadata.Namespace != ns:
		return nil, bad("metadata.namespace is %q, not %q", o.Metadata.Namespace, ns)
	case s.spec.Kind != "" && o.Kind != s.spec.Kind:
		return nil, bad("kind is %q, not %s", o.Kind, s.spec.Kind)
	}
	o.Metadata.ResourceVersion = strconv.FormatUint(rev, 10)
	return o, nil
}

// stored is an object's stored form, and where its parts lie in it.
type stored struct {
	data   []byte
	layout string
}

func encode(o *object.Object) (stored, error) { return encodeOver(o, nil) }

// encodeOver is encode of o, a change to cur as stored: the parts o
// leaves as cur has them are written as they are (object.EncodeLayoutOver).
func encodeOver(o, cur *object.Object) (stored, error) {
	c := *o
	c.Metadata.ResourceVersion = ""
	b, l, err := object.EncodeLayoutOver(&c, cur)
	return stored{data: b, layout: l.String()}, err
}

// layoutIn is the layout a message's header gives (zero for none).
func layoutIn(h nats.Header) object.Layout {
	if l := h.Get(headerLayout); l != "" {
		return object.ParseLayout(l)
	}
	return object.Layout{}
}

// header makes the headers of a write of st: its layout's, and those
// given as pairs of name and value.
func (st stored) header(pairs ...string) nats.Header {
	h := make(nats.Header, 1+len(pairs)/2)
	if st.layout != "" {
		h[headerLayout] = []string{st.layout}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		h[pairs[i]] = []string{pairs[i+1]}
	}
	return h
}

// GetConfirmed is Get after a confirmation (see confirm.go), so that a
// leader cut off from its peers, which cannot store one, does not answer
// from its stale state: the read a client's GET gets. It costs a write.
func (s *Store) GetConfirmed(ctx context.Context, key string) (*object.Object, error) {
	if _, err := s.confirmed(ctx); err != nil {
		return nil, err
	}
	return s.Get(ctx, key)
}

// Get reads the latest version of a key from the stream's leader, so that
// it sees every write acknowledged before it, unless a leader cut off
// from its peers answers (see confirm.go): for a read that a
// compare-and-swap write follows, which such a read makes fail.
func (s *Store) Get(ctx context.Context, key string) (*object.Object, error) {
	m, err := s.lastLive(ctx, key)
	if err != nil {
		return nil, err
	}
	return s.decode(key, m.data, m.seq, layoutIn(m.header))
}

// Raw reads the stored bytes of a key and their revision, whether or not
// they hold a valid object: the way to look at a corrupt value.
func (s *Store) Raw(ctx context.Context, key string) ([]byte, uint64, error) {
	m, err := s.lastLive(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	return m.data, m.seq, nil
}

func (s *Store) lastLive(ctx context.Context, key string) (*storedMsg, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("%w: %q is not a valid key", ErrInvalid, key)
	}
	m, err := s.conn.lastMsg(ctx, s.stream(), s.subjPrefix+key)
	if err == nil && m.tombstone() {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Resource, key, err)
	}
	return m, nil
}

// validKey accepts what can be a subject token sequence: no wildcards,
// spaces or empty tokens.
func validKey(key string) bool {
	if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		return false
	}
	return !strings.ContainsAny(key, " \t\r\n*>")
}

// publish writes data to key if the key's last revision is still expect,
// carrying the trace context of ctx.
func (s *Store) publish(ctx context.Context, key string, data []byte, expect uint64, hdr nats.Header) (uint64, error) {
	if !validKey(key) {
		return 0, fmt.Errorf("%w: %q is not a valid key", ErrInvalid, key)
	}
	if hdr == nil {
		hdr = nats.Header{}
	}
	injectTrace(ctx, hdr)
	msg := &nats.Msg{Subject: s.subjPrefix + key, Header: hdr, Data: data}
	ack, err := s.conn.casPublish(ctx, s.stream(), msg, expect)
	if err != nil {
		return 0, err
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
			map[bool]string{true: "set", false: "empty"}[s.spec.Namespaced], s.spec.Resource)
	}
	n.Metadata.UID = uuid.NewString()
	n.Metadata.CreationTimestamp = s.now().UTC().Truncate(time.Second)
	n.Metadata.Generation = 1
	n.Metadata.DeletionTimestamp = nil
	n.Metadata.DeletionGracePeriodSeconds = nil
	n = track(ctx, "", nil, n)
	st, err := encode(n)
	if err != nil {
		return nil, err
	}
	key := n.Key()
	rev, err := s.publish(ctx, key, st.data, 0, st.header(HeaderOp, opCreate))
	if errors.Is(err, ErrConflict) {
		// The key has a history: reuse it only if its last entry is a tombstone.
		var last uint64
		last, err = s.tombstoneRevision(ctx, key, nil)
		if err == nil {
			rev, err = s.publish(ctx, key, st.data, last, st.header(HeaderOp, opCreate))
		}
		if errors.Is(err, ErrConflict) {
			err = ErrAlreadyExists
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Resource, key, err)
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(rev, 10)
	s.noteWrite(ctx, VerbCreated, key, rev)
	return n, nil
}

// createOver creates n (already filled in) over a tombstone, or reports
// ErrAlreadyExists when the key holds a live object (ErrFenced when a fence
// refuses authority a).
func (s *Store) createOver(ctx context.Context, n *object.Object, a *Authority) (*object.Object, error) {
	last, err := s.tombstoneRevision(ctx, n.Key(), a)
	if err != nil {
		return nil, err
	}
	st, err := encode(n)
	if err != nil {
		return nil, err
	}
	rev, err := s.publish(ctx, n.Key(), st.data, last, st.header(HeaderOp, opCreate))
	if errors.Is(err, ErrConflict) {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Resource, n.Key(), ErrAlreadyExists)
	}
	if err != nil {
		return nil, err
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(rev, 10)
	s.noteWrite(ctx, VerbCreated, n.Key(), rev)
	return n, nil
}

// tombstoneRevision returns the revision of the delete marker a key ends
// with, or ErrAlreadyExists when it holds a live value, or ErrFenced when
// the marker is a fence that refuses authority a.
func (s *Store) tombstoneRevision(ctx context.Context, key string, a *Authority) (uint64, error) {
	msg, err := s.conn.lastMsg(ctx, s.stream(), s.subjPrefix+key)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if s.fenced(msg, a) {
		return 0, fmt.Errorf("%s %q: %w", s.spec.Resource, key, ErrFenced)
	}
	if msg.tombstone() {
		return msg.seq, nil
	}
	return 0, ErrAlreadyExists
}

// UpdateOptions tune Update.
type UpdateOptions struct {
	// Current is the stored version the caller read, at the revision named
	// by the new object's resourceVersion, as a read gave it or as Create
	// or Update returned it, unchanged (a cache's copy whose Keep left the
	// metadata and the parts the write keeps as they were); given, it
	// saves a read. The write trusts it: a part of the new object that is
	// Current's byte for byte is written as it is, unchecked, and a head
	// that is Current's is told its readers as the stored one's
	// (headerHead).
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
		return nil, fmt.Errorf("%s %q: %w (have %s, latest %s)", s.spec.Resource, key, ErrConflict,
			o.Metadata.ResourceVersion, cur.Metadata.ResourceVersion)
	}
	n := o.Clone()
	n.Metadata.UID = cur.Metadata.UID
	n.Metadata.CreationTimestamp = cur.Metadata.CreationTimestamp
	n.Metadata.GenerateName = cur.Metadata.GenerateName
	n.Metadata.DeletionTimestamp = cur.Metadata.DeletionTimestamp
	n.Metadata.DeletionGracePeriodSeconds = cur.Metadata.DeletionGracePeriodSeconds
	n.Metadata.Generation = cur.Metadata.Generation
	sameSpec := object.SameJSON(cur.Spec, n.Spec)
	if !sameSpec {
		n.Metadata.Generation++
	}
	if n.Metadata.Deleting() && len(cur.Metadata.Finalizers) > 0 && len(n.Metadata.Finalizers) == 0 {
		return s.remove(ctx, n, rev)
	}
	sub := ""
	if sameSpec && object.StatusOnly(cur, n) {
		sub = subresourceStatus
	}
	n = track(ctx, sub, cur, n)
	// A write that changes nothing is not made: no new revision, no
	// watch event, no reconcile.
	if sameSpec && unchanged(cur, n) {
		return cur, nil
	}
	st, err := encodeOver(n, cur)
	if err != nil {
		return nil, err
	}
	hdr := st.header()
	if st.layout != "" && object.SameHead(cur, n) {
		hdr[headerHead] = []string{headOf(rev, n.Metadata.Generation)}
	}
	var by *Author
	verb := VerbUpdated
	if sub == subresourceStatus {
		hdr[HeaderOp], verb = []string{opStatus}, VerbUpdatedStatus
		if by = authorOf(ctx, s.spec.Resource, key); by != nil {
			hdr[headerBy] = []string{by.name}
		}
	}
	nrev, err := s.publish(ctx, key, st.data, rev, hdr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Resource, key, err)
	}
	if by != nil {
		by.noteWrote(nrev)
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(nrev, 10)
	s.noteWrite(ctx, verb, key, nrev)
	return n, nil
}

// unchanged reports whether n, whose spec is cur's, would store what cur
// holds. Status and other members compare as encodings do
// (object.SameEncoding); metadata field by field. A difference it sees
// where there is none (an empty map for none) costs one write that
// changes nothing, after which the two agree.
func unchanged(cur, n *object.Object) bool {
	if cur.APIVersion != n.APIVersion || cur.Kind != n.Kind || !object.SameEncoding(cur.Status, n.Status) ||
		len(cur.Fields) != len(n.Fields) || !reflect.DeepEqual(cur.Metadata, n.Metadata) {
		return false
	}
	for k, v := range cur.Fields {
		if !object.SameEncoding(v, n.Fields[k]) {
			return false
		}
	}
	return true
}

// remove writes a tombstone that carries the object's last state, so that
// watchers see what was deleted (and who owned it).
func (s *Store) remove(ctx context.Context, o *object.Object, rev uint64) (*object.Object, error) {
	n := o.Clone()
	if n.Metadata.DeletionTimestamp == nil {
		t := s.now().UTC().Truncate(time.Second)
		n.Metadata.DeletionTimestamp = &t
	}
	st, err := encode(n)
	if err != nil {
		return nil, err
	}
	nrev, err := s.publish(ctx, n.Key(), st.data, rev, st.header(kvOp, kvDel))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", s.spec.Resource, n.Key(), err)
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(nrev, 10)
	s.noteWrite(ctx, VerbDeleted, n.Key(), nrev)
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
	// Fence, when set, is the generation of the object's controller that
	// removes it: the object, and the tombstone it leaves, refuse creates
	// on the authority of its earlier generations (see Fence).
	Fence int64
}

// Delete removes an object, or marks it for deletion when it has
// finalizers or a grace period. It returns the object as it now stands and
// whether it is gone. Without a Revision precondition a concurrent write is
// retried until ctx ends, its UID precondition checked again each time, as
// a delete must not fail on a race (a status write landing between the
// read and the removal); with one, it is a conflict, as is another uid. A
// corrupt value (see ErrCorrupt) is removed as it is, with no object to
// return and no uid to check.
func (s *Store) Delete(ctx context.Context, key string, opts DeleteOptions) (*object.Object, bool, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.Get(ctx, key)
		var ce *CorruptError
		if errors.As(err, &ce) {
			return nil, true, s.removeCorrupt(ctx, ce, opts)
		}
		if err != nil {
			return nil, false, err
		}
		o, gone, err := s.deleteOnce(ctx, cur, opts)
		raced := opts.Revision == 0 && (opts.UID == "" || opts.UID == cur.Metadata.UID)
		if errors.Is(err, ErrConflict) && raced && ctx.Err() == nil {
			conflictPause(ctx, attempt)
			continue
		}
		return o, gone, err
	}
}

// conflictPause spreads out retries after repeated conflicts on one key.
func conflictPause(ctx context.Context, attempt int) {
	if attempt >= 3 {
		clock.Sleep(ctx, time.Duration(min(attempt, 20))*time.Millisecond)
	}
}

// removeCorrupt writes a bare tombstone over a corrupt value.
func (s *Store) removeCorrupt(ctx context.Context, ce *CorruptError, opts DeleteOptions) error {
	if opts.UID != "" || (opts.Revision != 0 && opts.Revision != ce.Revision) {
		return fmt.Errorf("%s %q: %w (the stored value is corrupt, so a precondition cannot hold)", s.spec.Resource, ce.Key, ErrConflict)
	}
	if _, err := s.publish(ctx, ce.Key, nil, ce.Revision, nats.Header{kvOp: []string{kvDel}}); err != nil {
		return fmt.Errorf("%s %q: %w", s.spec.Resource, ce.Key, err)
	}
	return nil
}

func (s *Store) deleteOnce(ctx context.Context, cur *object.Object, opts DeleteOptions) (*object.Object, bool, error) {
	rev, err := Revision(cur.Metadata.ResourceVersion)
	if err != nil {
		return nil, false, err
	}
	if opts.Revision != 0 && opts.Revision != rev {
		return nil, false, fmt.Errorf("%s %q: %w (precondition revision %d, latest %d)",
			s.spec.Resource, cur.Key(), ErrConflict, opts.Revision, rev)
	}
	if opts.UID != "" && opts.UID != cur.Metadata.UID {
		return nil, false, fmt.Errorf("%s %q: %w (precondition uid %s, stored %s)",
			s.spec.Resource, cur.Key(), ErrConflict, opts.UID, cur.Metadata.UID)
	}
	graceful := opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds > 0
	if len(cur.Metadata.Finalizers) == 0 && !graceful {
		o, err := s.remove(ctx, withFence(cur, opts.Fence), rev)
		return o, err == nil, err
	}
	n := withFence(cur, opts.Fence)
	if cur.Metadata.Deleting() {
		if n == cur {
			return cur, false, nil
		}
		// Already going, but not fenced as far: fence it as it is.
		return s.republish(ctx, n, rev)
	}
	n = n.Clone()
	t := s.now().UTC().Truncate(time.Second)
	if graceful {
		t = t.Add(time.Duration(*opts.GracePeriodSeconds) * time.Second)
		g := *opts.GracePeriodSeconds
		n.Metadata.DeletionGracePeriodSeconds = &g
	}
	n.Metadata.DeletionTimestamp = &t
	return s.republish(ctx, n, rev)
}

// republish writes n over revision rev of a deleting object.
func (s *Store) republish(ctx context.Context, n *object.Object, rev uint64) (*object.Object, bool, error) {
	st, err := encode(n)
	if err != nil {
		return nil, false, err
	}
	nrev, err := s.publish(ctx, n.Key(), st.data, rev, st.header())
	if err != nil {
		return nil, false, fmt.Errorf("%s %q: %w", s.spec.Resource, n.Key(), err)
	}
	n.Metadata.ResourceVersion = strconv.FormatUint(nrev, 10)
	s.noteWrite(ctx, VerbDeleted, n.Key(), nrev)
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

// CreateOptions tune CreateMany.
type CreateOptions struct {
	// Authority, when set, is the controller generation the objects are
	// created for; a key it has fenced since refuses them (ErrFenced).
	Authority *Authority
}

// CreateMany creates objects with pipelined (asynchronous) publishes, which
// is several times faster than one Create after another, and returns one
// error (nil, ErrAlreadyExists, ErrFenced, …) per object.
func (s *Store) CreateMany(ctx context.Context, objs []*object.Object, opts CreateOptions) ([]*object.Object, []error) {
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
		n = track(ctx, "", nil, n)
		st, err := encode(n)
		if err != nil {
			errs[i] = err
			continue
		}
		hdr := st.header(HeaderOp, opCreate)
		injectTrace(ctx, hdr)
		msg := &nats.Msg{Subject: s.subjPrefix + n.Key(), Header: hdr, Data: st.data}
		f, err := s.conn.js.PublishMsgAsync(msg, jetstream.WithExpectLastSequencePerSubject(0), jetstream.WithStallWait(tryTimeout))
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
			wroteAck(ack)
			out[i].Metadata.ResourceVersion = strconv.FormatUint(ack.Sequence, 10)
			s.noteWrite(ctx, VerbCreated, out[i].Key(), ack.Sequence)
		case err := <-f.Err():
			if !errors.Is(translate(err), ErrConflict) {
				out[i], errs[i] = nil, translate(err)
				continue
			}
			// Taken, or a key with history (a tombstone) to create over.
			out[i], errs[i] = s.createOver(ctx, out[i], opts.Authority)
		case <-ctx.Done():
			errs[i] = ctx.Err()
		}
	}
	return out, errs
}

// PutRaw writes data to key as it is, with no check of any kind, and
// returns its revision: for fault injection (a buggy writer, anyone on the
// NATS port) and for repairs. Readers see what it wrote as a corrupt value
// unless it is a valid object of its key.
func (s *Store) PutRaw(ctx context.Context, key string, data []byte) (uint64, error) {
	if !validKey(key) {
		return 0, fmt.Errorf("%w: %q is not a valid key", ErrInvalid, key)
	}
	ack, err := s.conn.publish(ctx, &nats.Msg{Subject: s.subjPrefix + key, Data: data})
	if err != nil {
		return 0, translate(err)
	}
	return ack.Sequence, nil
}

// ConsumerCount is how many consumers the server holds on the store's
// stream: lists and watches of every process, each alive only while it reads.
func (s *Store) ConsumerCount(ctx context.Context) (int, error) {
	st, err := s.conn.js.Stream(ctx, s.stream())
	if err != nil {
		return 0, translate(err)
	}
	return st.CachedInfo().State.Consumers, nil
}

// DeleteAll deletes every object of the store, as when its kind is no
// longer defined, and returns how many it deleted. Each goes with its own
// tombstone, so watchers see every delete; the bucket stays, so that the
// kind's revisions keep growing should it be defined again (a bucket
// deleted and made anew would start over at 1, and could even be made
// from the old one's files while the server still removes them).
func (s *Store) DeleteAll(ctx context.Context) (int, error) {
	snap, err := s.snapshot(ctx, s.filter("", ""), false, &confirmation{s: s})
	if err != nil {
		return 0, err
	}
	n := 0
	for key, o := range snap.items {
		// Gone outright, finalizers or not: nothing will finalize a kind
		// that is no longer there.
		for {
			rev, _ := Revision(o.Metadata.ResourceVersion)
			_, err = s.remove(ctx, o, rev)
			if !errors.Is(err, ErrConflict) {
				break
			}
			if o, err = s.Get(ctx, key); err != nil {
				break
			}
		}
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrCorrupt) {
			return n, err
		}
		n++
	}
	for _, ce := range snap.corrupt {
		if err := s.removeCorrupt(ctx, ce, DeleteOptions{}); err != nil && !errors.Is(err, ErrConflict) {
			return n, err
		}
		n++
	}
	return n, nil
}
