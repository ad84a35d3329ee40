package reconcile_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

// running runs inf until the test ends, and waits until it has synced.
func running(t *testing.T, inf *reconcile.Informer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	poll.Until(t, "the informer synced", 10*time.Second, inf.Synced)
}

// held waits until inf holds o's revision of its key.
func held(t *testing.T, inf *reconcile.Informer, o *object.Object) {
	t.Helper()
	poll.Until(t, "the informer holds "+o.Key()+" at "+o.Metadata.ResourceVersion, 10*time.Second, func() bool {
		cur, ok := inf.Get(o.Key())
		return ok && cur.Metadata.ResourceVersion == o.Metadata.ResourceVersion
	})
}

// An informer hands its decoder each key's previous version and its form,
// so that a decoder may reuse what did not change; a new key has none.
func TestDecoderSeesThePreviousVersion(t *testing.T) {
	ctx := t.Context()
	s := store(t, bustest.Conn(t))
	type call struct {
		rev, oldRev string
		oldValue    any
	}
	var mu sync.Mutex
	var calls []call
	inf := reconcile.NewInformer(widgets, s, nil)
	inf.SetDecoder(func(o, old *object.Object, oldValue any) any {
		mu.Lock()
		defer mu.Unlock()
		c := call{rev: o.Metadata.ResourceVersion, oldValue: oldValue}
		if old != nil {
			c.oldRev = old.Metadata.ResourceVersion
		}
		calls = append(calls, c)
		return "form of " + o.Metadata.ResourceVersion
	})
	running(t, inf)
	created, err := s.Create(ctx, widget("w"))
	if err != nil {
		t.Fatal(err)
	}
	held(t, inf, created)
	if v, _ := inf.Value(created.Key()); v != "form of "+created.Metadata.ResourceVersion {
		t.Fatalf("the create's form is %v", v)
	}
	next := created.Clone()
	next.Spec = json.RawMessage(`{"size":2}`)
	updated, err := s.Update(ctx, next, bus.UpdateOptions{Current: created})
	if err != nil {
		t.Fatal(err)
	}
	held(t, inf, updated)
	if v, _ := inf.Value(updated.Key()); v != "form of "+updated.Metadata.ResourceVersion {
		t.Fatalf("the update's form is %v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []call{
		{rev: created.Metadata.ResourceVersion},
		{rev: updated.Metadata.ResourceVersion, oldRev: created.Metadata.ResourceVersion, oldValue: "form of " + created.Metadata.ResourceVersion},
	}
	if len(calls) != len(want) {
		t.Fatalf("decoder calls %+v, want %+v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, calls[i], want[i])
		}
	}
}

// An informer keeps what its keep function returns: its handlers, Get,
// List and its indexes see that, and a deletion reaches the handlers as
// the last version kept. Its decoder sees each object whole, and the
// keep function is handed the decoded form to make it refer to the copy.
func TestInformerKeepsWhatItsKeepReturns(t *testing.T) {
	ctx := t.Context()
	s := store(t, bustest.Conn(t))
	inf := reconcile.NewInformer(widgets, s, nil)
	lean := func(o *object.Object) bool { return string(o.Spec) == `{"lean":true}` }
	type form struct{ o *object.Object }
	var mu sync.Mutex
	var decoded, kept, changed []bool
	inf.SetKeep(func(o *object.Object, value any) *object.Object {
		mu.Lock()
		defer mu.Unlock()
		c := *o
		c.Spec = json.RawMessage(`{"lean":true}`)
		f, ok := value.(*form)
		kept = append(kept, ok && f.o == o)
		if ok {
			f.o = &c
		}
		return &c
	})
	inf.SetDecoder(reconcile.DecodeEach(func(o *object.Object) any {
		mu.Lock()
		defer mu.Unlock()
		decoded = append(decoded, lean(o))
		return &form{o: o}
	}))
	inf.AddIndex("spec", func(o *object.Object) []string { return []string{string(o.Spec)} })
	inf.OnChange(func(ch reconcile.Change) {
		mu.Lock()
		defer mu.Unlock()
		for _, o := range []*object.Object{ch.Old, ch.New} {
			if o != nil {
				changed = append(changed, lean(o))
			}
		}
	})
	running(t, inf)
	created, err := s.Create(ctx, widget("w"))
	if err != nil {
		t.Fatal(err)
	}
	held(t, inf, created)
	o, _ := inf.Get(created.Key())
	if !lean(o) || o.Metadata.ResourceVersion != created.Metadata.ResourceVersion {
		t.Fatalf("Get gave spec %s at %s", o.Spec, o.Metadata.ResourceVersion)
	}
	if v, _ := inf.Value(created.Key()); v.(*form).o != o {
		t.Fatal("the decoded form does not refer to the object kept")
	}
	if l := inf.List(); len(l) != 1 || !lean(l[0]) {
		t.Fatalf("List gave %v", l)
	}
	if got := inf.ByIndex("spec", `{"lean":true}`); len(got) != 1 {
		t.Fatalf("the index files %d objects under the kept spec", len(got))
	}
	if _, _, err := s.Delete(ctx, created.Key(), bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the informer saw the delete", 10*time.Second, func() bool { return len(inf.List()) == 0 })
	mu.Lock()
	defer mu.Unlock()
	if want := []bool{false}; !slices.Equal(decoded, want) {
		t.Fatalf("the decoder saw kept objects %v, want %v", decoded, want)
	}
	if want := []bool{true, false}; !slices.Equal(kept, want) {
		t.Fatalf("the keep function was handed the form of what it keeps %v, want %v (a delete has none)", kept, want)
	}
	if want := []bool{true, true}; !slices.Equal(changed, want) {
		t.Fatalf("the handlers saw kept objects %v, want %v", changed, want)
	}
}

// An index follows each change of its values, and a change that leaves
// them alone leaves the object where it was; an index over the decoded
// form follows it alike, handed each version's form as it is filed and
// as it is taken out.
func TestIndexFollowsChanges(t *testing.T) {
	ctx := t.Context()
	s := store(t, bustest.Conn(t))
	inf := reconcile.NewInformer(widgets, s, nil)
	inf.AddIndex("color", func(o *object.Object) []string {
		if c := o.Metadata.Labels["color"]; c != "" {
			return []string{c}
		}
		return nil
	})
	// The decoded form names the revision too, so that a form left behind
	// by a change shows.
	inf.SetDecoder(reconcile.DecodeEach(func(o *object.Object) any {
		return "form:" + o.Metadata.Labels["color"] + "@" + o.Metadata.ResourceVersion
	}))
	inf.AddValueIndex("decoded color", func(o *object.Object, v any) []string {
		if c, _, _ := strings.Cut(v.(string), "@"); c != "form:" {
			return []string{c}
		}
		return nil
	})
	running(t, inf)
	keys := func(index, color string) []string {
		var out []string
		for _, o := range inf.ByIndex(index, color) {
			out = append(out, o.Metadata.Name)
		}
		slices.Sort(out)
		return out
	}
	expect := func(what string, rev string, red, blue []string) {
		t.Helper()
		poll.Until(t, what, 10*time.Second, func() bool {
			o, ok := inf.Get(widget("w").Key())
			return (rev == "" && !ok) || (ok && o.Metadata.ResourceVersion == rev)
		})
		if r, b := keys("color", "red"), keys("color", "blue"); !slices.Equal(r, red) || !slices.Equal(b, blue) {
			t.Fatalf("%s: red %v, blue %v; want %v, %v", what, r, b, red, blue)
		}
		if r, b := keys("decoded color", "form:red"), keys("decoded color", "form:blue"); !slices.Equal(r, red) || !slices.Equal(b, blue) {
			t.Fatalf("%s: by the decoded form red %v, blue %v; want %v, %v", what, r, b, red, blue)
		}
		// An index whose value a change left alone gives the object as
		// it is now, and its decoded form.
		for _, color := range []string{"red", "blue"} {
			for _, o := range inf.ByIndex("color", color) {
				if o.Metadata.ResourceVersion != rev {
					t.Fatalf("%s: the %s index gives revision %s, want %s", what, color, o.Metadata.ResourceVersion, rev)
				}
			}
			forms := inf.ValuesByIndex("color", color)
			if n, want := len(forms), len(inf.ByIndex("color", color)); n != want {
				t.Fatalf("%s: the %s index gives %d decoded forms for %d objects", what, color, n, want)
			}
			for _, f := range forms {
				if want := "form:" + color + "@" + rev; f != want {
					t.Fatalf("%s: the %s index gives the decoded form %v, want %s", what, color, f, want)
				}
			}
		}
	}
	w := widget("w")
	w.Metadata.Labels = map[string]string{"color": "red"}
	cur, err := s.Create(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	expect("created red", cur.Metadata.ResourceVersion, []string{"w"}, nil)
	update := func(change func(*object.Object)) {
		t.Helper()
		next := cur.Clone()
		change(next)
		if cur, err = s.Update(ctx, next, bus.UpdateOptions{Current: cur}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(o *object.Object) { o.Spec = json.RawMessage(`{"size":3}`) })
	expect("resized, still red", cur.Metadata.ResourceVersion, []string{"w"}, nil)
	update(func(o *object.Object) { o.Metadata.Labels = map[string]string{"color": "blue"} })
	expect("turned blue", cur.Metadata.ResourceVersion, nil, []string{"w"})
	update(func(o *object.Object) { o.Metadata.Labels = nil })
	expect("no color", cur.Metadata.ResourceVersion, nil, nil)
	update(func(o *object.Object) { o.Metadata.Labels = map[string]string{"color": "red"} })
	expect("red again", cur.Metadata.ResourceVersion, []string{"w"}, nil)
	if _, _, err := s.Delete(ctx, cur.Key(), bus.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("deleted", "", nil, nil)

	// Made again under the same key: the indexes hold the new object, not
	// the one deleted.
	w.Metadata.Labels = map[string]string{"color": "blue"}
	if cur, err = s.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	expect("made again, blue", cur.Metadata.ResourceVersion, nil, []string{"w"})

	// An index added to a cache that holds objects already indexes them.
	inf.AddIndex("shape", func(*object.Object) []string { return []string{"round"} })
	if got := inf.ValuesByIndex("shape", "round"); len(got) != 1 || got[0] != "form:blue@"+cur.Metadata.ResourceVersion {
		t.Fatalf("an index added late gives %v, want the object's form", got)
	}
}

// A revision confirmed after the last write (a list's, a cache's catching
// up) lies past every key's; the informer reaches it all the same, from
// the confirmation itself, rather than waiting for the next write.
func TestInformerReachesAConfirmedRevision(t *testing.T) {
	ctx := t.Context()
	s := store(t, bustest.Conn(t))
	if _, err := s.Create(ctx, widget("w")); err != nil {
		t.Fatal(err)
	}
	inf := reconcile.NewInformer(widgets, s, nil)
	running(t, inf)
	for range 3 {
		rev, err := s.LastRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !inf.WaitForRevision(ctx, rev, 30*time.Second) {
			t.Fatalf("the informer did not reach the confirmed revision %d", rev)
		}
		if _, delivered, _ := inf.Snapshot(); delivered < rev {
			t.Fatalf("the informer reached %d but says it delivered up to %d", rev, delivered)
		}
	}
}

// A change whose writer left the head alone (a status written) is
// decoded over the object the informer keeps of the revision before: the
// kept object's metadata comes through shared, not decoded again. A
// change of the head is decoded whole.
func TestInformerDecodesOverWhatItKeeps(t *testing.T) {
	ctx := t.Context()
	s := store(t, bustest.Conn(t))
	inf := reconcile.NewInformer(widgets, s, nil)
	var mu sync.Mutex
	var last *object.Object
	var over []bool
	inf.SetKeep(func(o *object.Object, _ any) *object.Object {
		mu.Lock()
		defer mu.Unlock()
		over = append(over, last != nil && unsafe.StringData(o.Metadata.Name) == unsafe.StringData(last.Metadata.Name))
		// The name as a string of its own, which no decoding hands out.
		c := *o
		c.Metadata.Name = strings.Clone(o.Metadata.Name)
		last = &c
		return &c
	})
	running(t, inf)
	cur, err := s.Create(ctx, widget("w"))
	if err != nil {
		t.Fatal(err)
	}
	held(t, inf, cur)
	for _, change := range []func(o *object.Object){
		func(o *object.Object) { o.Status = json.RawMessage(`{"ready":1}`) },
		func(o *object.Object) { o.Metadata.Labels = map[string]string{"x": "y"} },
		func(o *object.Object) { o.Status = json.RawMessage(`{"ready":2}`) },
	} {
		n := cur.Clone()
		change(n)
		if cur, err = s.Update(ctx, n, bus.UpdateOptions{Current: cur}); err != nil {
			t.Fatal(err)
		}
		held(t, inf, cur)
		stored, err := s.Get(ctx, cur.Key())
		if err != nil {
			t.Fatal(err)
		}
		if kept, _ := inf.Get(cur.Key()); !reflect.DeepEqual(kept, stored) {
			t.Fatalf("the informer holds\n%+v\nthe store\n%+v", kept, stored)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []bool{false, true, false, true}; !slices.Equal(over, want) {
		t.Fatalf("decoded over the kept object: %v, want %v", over, want)
	}
}
