package bus_test

// Corrupt values: stored values that are not objects of their key are
// reported key by key and stop neither reads nor deletes.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// TestCorruptValuesStopNothing: values that are not objects of their key
// are reported as corrupt, key by key, and stop neither reads nor deletes.
func TestCorruptValuesStopNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newCorruptFixture(ctx, t, openStore(t, bustest.Conn(t), "corrupt.example.com"))
	f.checkGetsAndRaw(ctx, t)
	f.checkLists(ctx, t)

	ch, err := f.s.Watch(ctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.checkInitialEvents(t, ch)
	for key := range f.bad {
		f.deleteAndRecreate(ctx, t, ch, key)
	}
	res, err := f.s.List(ctx, bus.ListOptions{})
	if err != nil || len(res.Items) != len(f.good)+len(f.bad) || len(res.Corrupt) != 0 {
		t.Fatalf("list after the repairs: %v", err)
	}
}

// corruptFixture is a store holding good widgets and corrupt values side
// by side: the keys of the good ones, the bytes of the corrupt ones, and
// the revision each corrupt value was written at, which every report of it
// must name.
type corruptFixture struct {
	s      *bus.Store
	good   map[string]bool
	bad    map[string][]byte
	badRev map[string]uint64
}

// newCorruptFixture creates two good widgets and writes four kinds of
// corrupt value beside them: bytes that are not JSON, null, an object of
// another name than its key, and an object of another kind.
func newCorruptFixture(ctx context.Context, t *testing.T, s *bus.Store) *corruptFixture {
	t.Helper()
	good := map[string]bool{}
	for _, name := range []string{"good1", "good2"} {
		o, err := s.Create(ctx, widget("ns", name, `{}`, nil))
		if err != nil {
			t.Fatal(err)
		}
		good[o.Key()] = true
	}
	other := widget("ns", "wrongkind", `{}`, nil)
	other.Kind = "Gadget"
	bad := map[string][]byte{
		"ns.notjson":   []byte(`{"kind": "Widget", metadata`),
		"ns.null":      []byte(`null`),
		"ns.wrongname": mustJSON(t, widget("ns", "someoneelse", `{}`, nil)),
		"ns.wrongkind": mustJSON(t, other),
	}
	badRev := map[string]uint64{}
	for key, data := range bad {
		rev, err := s.PutRaw(ctx, key, data)
		if err != nil {
			t.Fatal(err)
		}
		badRev[key] = rev
	}
	return &corruptFixture{s: s, good: good, bad: bad, badRev: badRev}
}

// mustJSON marshals an object to write it raw, under a key it does not belong to.
func mustJSON(t *testing.T, o *object.Object) []byte {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGetsAndRaw checks that a Get of each corrupt key fails with a
// *CorruptError naming the key and its revision, and that Raw still
// returns the exact bytes at that revision.
func (f *corruptFixture) checkGetsAndRaw(ctx context.Context, t *testing.T) {
	t.Helper()
	for key, data := range f.bad {
		_, err := f.s.Get(ctx, key)
		var ce *bus.CorruptError
		if !errors.Is(err, bus.ErrCorrupt) || !errors.As(err, &ce) {
			t.Fatalf("get %s: %v, want a *CorruptError", key, err)
		}
		if ce.Key != key || ce.Revision != f.badRev[key] {
			t.Fatalf("get %s: corrupt error names %s@%d, want %s@%d", key, ce.Key, ce.Revision, key, f.badRev[key])
		}
		raw, rev, err := f.s.Raw(ctx, key)
		if err != nil || !bytes.Equal(raw, data) || rev != f.badRev[key] {
			t.Fatalf("raw %s: %q@%d (%v), want %q@%d", key, raw, rev, err, data, f.badRev[key])
		}
	}
}

// checkLists checks that lists of every namespace and of the one in use
// hold exactly the good objects and report exactly the corrupt keys, each
// at its revision.
func (f *corruptFixture) checkLists(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, ns := range []string{"", "ns"} {
		res, err := f.s.List(ctx, bus.ListOptions{Namespace: ns})
		if err != nil {
			t.Fatalf("list %q: %v", ns, err)
		}
		var items, corrupt []string
		for _, o := range res.Items {
			items = append(items, o.Key())
		}
		for _, ce := range res.Corrupt {
			corrupt = append(corrupt, ce.Key)
			if ce.Revision != f.badRev[ce.Key] {
				t.Fatalf("list %q: %s listed corrupt at %d, want %d", ns, ce.Key, ce.Revision, f.badRev[ce.Key])
			}
		}
		if want := sortedKeys(f.good); !slices.Equal(items, want) {
			t.Fatalf("list %q: items %v, want %v", ns, items, want)
		}
		if want := sortedKeys(f.bad); !slices.Equal(corrupt, want) {
			t.Fatalf("list %q: corrupt %v, want %v", ns, corrupt, want)
		}
	}
}

// checkInitialEvents checks that a watch's initial state is an Added event
// with its object for each good key and a Corrupt event at its revision for
// each corrupt key, and nothing else.
func (f *corruptFixture) checkInitialEvents(t *testing.T, ch <-chan bus.Event) {
	t.Helper()
	seenGood, seenBad := map[string]bool{}, map[string]bool{}
	for _, ev := range waitSynced(t, ch) {
		switch {
		case ev.Type == bus.Added && f.good[ev.Key] && ev.Object != nil:
			seenGood[ev.Key] = true
		case ev.Type == bus.Corrupt && f.bad[ev.Key] != nil && errors.Is(ev.Err, bus.ErrCorrupt) && ev.Revision == f.badRev[ev.Key]:
			seenBad[ev.Key] = true
		default:
			t.Fatalf("unexpected initial event %s %s@%d (object %v, err %v)", ev.Type, ev.Key, ev.Revision, ev.Object != nil, ev.Err)
		}
	}
	if len(seenGood) != len(f.good) || len(seenBad) != len(f.bad) {
		t.Fatalf("initial events: good %v, corrupt %v", seenGood, seenBad)
	}
}

// deleteAndRecreate checks that a corrupt key refuses a delete with a uid
// precondition (it has no uid to match) and stays as it was, is deleted
// without one, as the watch reports, and can then be created again, as the
// watch reports too.
func (f *corruptFixture) deleteAndRecreate(ctx context.Context, t *testing.T, ch <-chan bus.Event, key string) {
	t.Helper()
	if _, _, err := f.s.Delete(ctx, key, bus.DeleteOptions{UID: "any-uid"}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("delete %s with a uid precondition: %v, want ErrConflict", key, err)
	}
	if _, rev, err := f.s.Raw(ctx, key); err != nil || rev != f.badRev[key] {
		t.Fatalf("after the refused delete, %s: revision %d, err %v", key, rev, err)
	}
	o, gone, err := f.s.Delete(ctx, key, bus.DeleteOptions{})
	if err != nil || !gone || o != nil {
		t.Fatalf("delete %s: object %v, gone %v, err %v; want nil, true, nil", key, o, gone, err)
	}
	if ev := nextEvent(t, ch); ev.Type != bus.Deleted || ev.Key != key {
		t.Fatalf("watch after deleting %s: %s %s", key, ev.Type, ev.Key)
	}
	if _, err := f.s.Get(ctx, key); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("get %s after delete: %v, want ErrNotFound", key, err)
	}
	ns, name, _ := strings.Cut(key, ".")
	n, err := f.s.Create(ctx, widget(ns, name, `{}`, nil))
	if err != nil {
		t.Fatalf("create %s over the deleted corrupt value: %v", key, err)
	}
	if ev := nextEvent(t, ch); ev.Type != bus.Added || ev.Key != key || ev.Revision != rv(t, n) {
		t.Fatalf("watch after recreating %s: %s %s@%d", key, ev.Type, ev.Key, ev.Revision)
	}
}

// sortedKeys returns a map's keys in order, to compare with a list's.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
