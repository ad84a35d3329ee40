package bus

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/homeostat/homeostat/object"
)

// ListOptions tune List.
type ListOptions struct {
	Namespace string
	// Under, when set, lists only the objects named Under.<suffix> in the
	// namespace (the events of one object), reading none of the others.
	Under    string
	Selector object.Selector
	// Limit caps the page size; 0 means everything.
	Limit int
	// Continue is the token of the previous page.
	Continue string
	// Shared accepts items shared with the store's other shared readers
	// (lists, watches, informers), which the caller must not change; in
	// return each item's JSON comes too (ListResult.JSON), and a list
	// beside another shared reader decodes and encodes only the objects
	// none has read.
	Shared bool
}

// ListResult is one page of a list.
type ListResult struct {
	Items []*object.Object
	// Revision is the bucket revision the list reflects: at least that of
	// every write acknowledged before the list began. A watch that resumes
	// after it misses nothing.
	Revision uint64
	// Continue is set when more items follow.
	Continue string
	// Remaining counts items after this page.
	Remaining int64
	// Corrupt are the keys left out because their values are not valid
	// objects (see ErrCorrupt).
	Corrupt []*CorruptError
	// JSON holds, for a Shared list, each item's JSON as served
	// (resourceVersion set), in the order of Items.
	JSON [][]byte
}

type continueToken struct {
	Revision uint64 `json:"rv"`
	After    string `json:"after"`
}

// List returns live objects in key order. It is a linearizable read: it
// takes the stream's last sequence from its leader, then reads until it has
// caught up past it, so it holds every write acknowledged before it began
// (see snapshot).
// Later pages of a paginated list are read afresh and carry the first
// page's revision: each page is current, and watching from that revision
// catches up on anything the pages missed.
func (s *Store) List(ctx context.Context, opts ListOptions) (*ListResult, error) {
	tok, err := decodeContinue(opts.Continue)
	if err != nil {
		return nil, err
	}
	if opts.Shared {
		defer s.shared.join(false)()
	}
	filter := s.filter(opts.Namespace, "")
	if opts.Under != "" {
		if opts.Namespace == "" || !validKey(opts.Under) {
			return nil, fmt.Errorf("%w: listing by name needs a namespace and a name", ErrInvalid)
		}
		filter = s.subjPrefix + opts.Namespace + "." + opts.Under + ".*"
	}
	conf := &confirmation{s: s}
	if listablePage(opts) {
		if res, ok, err := s.page(ctx, filter, opts, tok, conf); ok || err != nil {
			return res, err
		}
	}
	shared := opts.Shared && opts.Under == ""
	snap, err := s.snapshot(ctx, filter, shared, conf)
	if err != nil {
		return nil, err
	}
	if shared {
		s.shared.forget(strings.TrimSuffix(filter[len(s.subjPrefix):], ">"), snap.items)
	}
	var jsonOf func(string, *object.Object) []byte
	if shared {
		jsonOf = func(k string, _ *object.Object) []byte { return snap.json[k] }
	}
	out := paginate(snap.items, snap.revision, opts, tok, jsonOf)
	out.Corrupt = snap.corrupt
	return out, nil
}

// paginate is the page of items (by key) that opts and tok ask for: those
// of the namespace matching the selector, in key order, after the token's
// key, at most the limit, with the token of the next page and the count
// of the items after it. revision is what the items reflect; a continued
// list keeps the first page's. jsonOf, when given, gives each item's JSON.
func paginate(items map[string]*object.Object, revision uint64, opts ListOptions, tok continueToken, jsonOf func(string, *object.Object) []byte) *ListResult {
	out := &ListResult{Revision: revision}
	if tok.Revision != 0 {
		out.Revision = tok.Revision
	}
	keys := make([]string, 0, len(items))
	for k, o := range items {
		if k > tok.After && (opts.Namespace == "" || o.Metadata.Namespace == opts.Namespace) && opts.Selector.Matches(o.Metadata.Labels) {
			keys = append(keys, k)
		}
	}
	if opts.Limit > 0 && len(keys) > opts.Limit {
		out.Remaining = int64(len(keys) - opts.Limit)
		keys = smallestSorted(keys, opts.Limit)
	} else {
		slices.Sort(keys)
	}
	for _, k := range keys {
		o := items[k]
		out.Items = append(out.Items, o)
		if jsonOf != nil {
			out.JSON = append(out.JSON, jsonOf(k, o))
		}
	}
	if out.Remaining > 0 {
		out.Continue = encodeContinue(continueToken{Revision: out.Revision, After: keys[len(keys)-1]})
	}
	return out
}

// smallestSorted is the n smallest of keys (distinct, more than n), in
// order, reordering keys: a page of a large cache sorts its page, not the
// cache. It keeps the n smallest seen in a heap with the greatest on top,
// which few of the others enter.
func smallestSorted(keys []string, n int) []string {
	h := keys[:n]
	for i := n/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for _, k := range keys[n:] {
		if k < h[0] {
			h[0] = k
			siftDown(h, 0)
		}
	}
	slices.Sort(h)
	return h
}

// siftDown moves h[i] down the heap h (greatest on top) to its place.
func siftDown(h []string, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1] > h[c] {
			c++
		}
		if h[i] >= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// PageOf is a page of objects held in memory, by key (a cache that a
// watch of this store keeps), as List gives a page: those of
// opts.Namespace matching opts.Selector, in key order, after
// opts.Continue's key, at most opts.Limit, with the same tokens. revision
// is the revision the objects reflect. For opts.Shared each item's JSON
// comes too: the one encoded for the store's shared readers when the
// object is theirs, else encoded here.
func (s *Store) PageOf(items map[string]*object.Object, revision uint64, opts ListOptions) (*ListResult, error) {
	if opts.Under != "" {
		return nil, fmt.Errorf("%w: a page of objects in memory cannot be listed by name", ErrInvalid)
	}
	tok, err := decodeContinue(opts.Continue)
	if err != nil {
		return nil, err
	}
	var jsonOf func(string, *object.Object) []byte
	if opts.Shared {
		jsonOf = s.sharedJSON
	}
	return paginate(items, revision, opts, tok, jsonOf), nil
}

// sharedJSON is o's JSON as served: the shared readers' when o is the
// object they hold for key, else encoded now.
func (s *Store) sharedJSON(key string, o *object.Object) []byte {
	if rev, err := Revision(o.Metadata.ResourceVersion); err == nil {
		if d, held, ok := s.shared.lookup(key, rev); ok && held == o {
			return d.encoded(o)
		}
	}
	b, _ := object.Encode(o)
	return b
}

func decodeContinue(token string) (continueToken, error) {
	var tok continueToken
	if token == "" {
		return tok, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(raw, &tok)
	}
	if err != nil {
		return tok, fmt.Errorf("%w: continue token is malformed", ErrInvalid)
	}
	return tok, nil
}

func encodeContinue(tok continueToken) string {
	raw, _ := json.Marshal(tok)
	return base64.RawURLEncoding.EncodeToString(raw)
}

type snapshot struct {
	items    map[string]*object.Object
	json     map[string][]byte // of items, in a shared read
	corrupt  []*CorruptError
	revision uint64
}

// snapshot reads the live objects of a namespace (or all). It first
// writes a confirmation (see confirm.go), above every write acknowledged
// before the list began, and reads every change until its consumer has
// nothing pending; a read of every key reads the whole stream and waits
// to have seen the confirmation (or a later message) too, so that its
// replica held all of them. Then it asks the stream's leader for the
// first matching message after the last one it read:
//
//   - none: the read holds the state at that moment, after the list began;
//   - one no later than the confirmation: the consumer has yet to deliver
//     it (its replica is behind, or its pending count ran short, see
//     below), so the read goes on;
//   - a later one: everything up to that sequence has been read, but a key
//     written during the read may have moved past it before the consumer
//     reached its old message (a key holds one message), and the server's
//     pending count can miss such a move for a moment (it counts the old
//     message's removal at once and the new message a little later). So
//     the leader lists the keys that hold a message, and the latest
//     message of each key the read has not seen is fetched from it.
//
// The revision is the last sequence read, at least the confirmation's; a
// key fetched at the end may carry a later one. Those questions go to
// whichever server answers as the leader: one that took itself for the
// leader for the moment after it thawed could answer them from its stale
// state (see confirm.go); a read of every key does not depend on them for
// what was acknowledged before it began.
//
// A shared read takes each object whose revision the store's shared
// objects hold from there, and keeps there those it decodes (see
// sharedObjects).
func (s *Store) snapshot(ctx context.Context, filter string, shared bool, conf *confirmation) (*snapshot, error) {
	release, err := s.conn.turns.take(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: list %s: waiting for a turn: %w", s.spec.Resource, err)
	}
	defer release()
	upTo, err := conf.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: list %s: %w", s.spec.Resource, err)
	}
	snap := &snapshot{items: map[string]*object.Object{}, json: map[string][]byte{}, revision: upTo}
	bad := map[string]*CorruptError{}
	read := map[string]bool{} // keys whose latest message read so far is applied
	apply := func(m rawMsg) {
		key := m.subject[len(s.subjPrefix):]
		read[key] = true
		delete(snap.items, key)
		delete(snap.json, key)
		delete(bad, key)
		var ev Event
		if shared {
			ev = s.sharedEvent(m, true, nil)
		} else {
			ev = s.toEvent(m, true, nil)
		}
		switch ev.Type {
		case Added, Modified:
			snap.items[key] = ev.Object
			if shared {
				snap.json[key] = ev.JSON()
			}
		case Corrupt:
			var ce *CorruptError
			if errors.As(ev.Err, &ce) {
				bad[ev.Key] = ce
			}
		}
	}
	var seen uint64
	moved := false
	spec := readSpec{stream: s.stream(), filter: s.readFilter(filter), what: "list " + s.spec.Resource, tries: oneShotTries}
	whole := spec.filter == wholeStream
	err = s.conn.read(ctx, spec, func(m rawMsg) error {
		if m.seq > 0 {
			seen = m.seq
			if !s.isConfirmation(m) {
				apply(m)
			}
		}
		if !m.caughtUp || (whole && seen < upTo) {
			return nil // a read of the whole stream waits to see the confirmation
		}
		next, err := s.conn.nextAfter(ctx, s.stream(), filter, seen)
		switch {
		case err != nil:
			return err
		case next != 0 && next <= upTo:
			return nil
		}
		moved = next != 0
		return errStopRead
	})
	if err == nil && moved {
		err = s.fetchUnread(ctx, filter, upTo, read, apply)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: list %s: %w", s.spec.Resource, err)
	}
	snap.revision = max(upTo, seen)
	for _, ce := range bad {
		snap.corrupt = append(snap.corrupt, ce)
	}
	sort.Slice(snap.corrupt, func(i, j int) bool { return snap.corrupt[i].Key < snap.corrupt[j].Key })
	return snap, nil
}

// fetchUnread applies the latest message of every key matching filter
// that holds one on the leader and that the read has not seen.
func (s *Store) fetchUnread(ctx context.Context, filter string, upTo uint64, read map[string]bool, apply func(rawMsg)) error {
	subjects, err := s.conn.subjects(ctx, s.stream(), filter, upTo)
	if err != nil {
		return err
	}
	for subject := range subjects {
		if read[subject[len(s.subjPrefix):]] {
			continue
		}
		m, err := s.conn.lastMsg(ctx, s.stream(), subject)
		if errors.Is(err, ErrNotFound) {
			continue // gone meanwhile: expired, or a delete marker compacted
		}
		if err != nil {
			return err
		}
		apply(rawMsg{subject: m.subject, header: m.header, data: m.data, seq: m.seq, time: m.time})
	}
	return nil
}

// LastRevision is the bucket's latest revision, confirmed by a quorum of
// its replicas (see confirm.go): at least that of every write
// acknowledged before the call. It costs a write. An informer's watch
// reaches it (the confirmation comes to it as Progress); a watch of keys
// alone may not until the next write.
func (s *Store) LastRevision(ctx context.Context) (uint64, error) {
	return s.confirmed(ctx)
}

// LeaderRevision is the bucket's latest revision as the server answering
// for the stream's leader knows it: one request, no write, and no proof
// against a leader cut off from its peers (see confirm.go). For a wait
// that such an answer only cuts short, as an informer's reaching it is:
// the informer reads confirmations too.
func (s *Store) LeaderRevision(ctx context.Context) (uint64, error) {
	return s.conn.lastSeq(ctx, s.stream())
}

// Reaches reports whether a read of the whole bucket that has read every
// message up to read holds every change up to upTo: whether no message
// after read and at most upTo is left, as the stream's leader knows it. A
// watch's Synced comes when its consumer counts nothing pending, a count
// that can run short of a message (see snapshot); this is how a reader
// checks before it takes Synced to mean upTo.
func (s *Store) Reaches(ctx context.Context, read, upTo uint64) (bool, error) {
	if read >= upTo {
		return true, nil
	}
	next, err := s.conn.nextAfter(ctx, s.stream(), s.filter("", ""), read)
	if err != nil {
		return false, err
	}
	return next == 0 || next > upTo, nil
}
