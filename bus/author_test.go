package bus_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// TestStatusWritesNameTheirAuthor: a write of the status alone of its
// author's key, through a context that holds the author, comes back to
// watchers, own and shared, resumed or not, marked with its name, and the
// author holds its revision; writes of more than the status, of another
// key or the same key of another resource, through a context that holds
// none, and the state a watch starts from are not marked.
func TestStatusWritesNameTheirAuthor(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	rs := bus.NewAuthor("replicaset", s.Resource(), "default.one")
	authored := bus.WithAuthor(ctx, rs)
	one, err := s.Create(authored, widget("default", "one", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if rs.Wrote() != 0 {
		t.Fatalf("a create was noted as a marked write, at %d", rs.Wrote())
	}
	write := func(ctx context.Context, o *object.Object, change func(*object.Object)) *object.Object {
		t.Helper()
		o = o.Clone()
		change(o)
		o, err := s.Update(ctx, o, bus.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	status := func(v string) func(*object.Object) {
		return func(o *object.Object) { o.Status = json.RawMessage(v) }
	}
	one = write(authored, one, status(`{"n":1}`))
	start := one

	// A watch from the start reads the last write as state, unmarked.
	fresh, err := s.Watch(ctx, bus.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := expect(t, fresh, bus.Added, "one"); ev.StatusBy != "" {
		t.Fatalf("the state a watch starts from is marked as by %q", ev.StatusBy)
	}
	expect(t, fresh, bus.Synced, "")
	shared, err := s.Watch(ctx, bus.WatchOptions{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, shared, bus.Added, "one")
	expect(t, shared, bus.Synced, "")

	resumed, err := s.Watch(ctx, bus.WatchOptions{AfterRevision: rv(t, start), Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, resumed, bus.Synced, "")

	// Each write is read by every watch before the next is made: a watch
	// that falls behind may pass over a version replaced since.
	watches := map[string]<-chan bus.Event{"a watch": fresh, "a shared watch": shared, "a resumed shared watch": resumed}
	check := func(o *object.Object, want string) {
		t.Helper()
		for name, ch := range watches {
			ev := expect(t, ch, bus.Modified, "one")
			if ev.Revision != rv(t, o) || ev.StatusBy != want {
				t.Errorf("%s: revision %d marked as by %q, want revision %d by %q", name, ev.Revision, ev.StatusBy, rv(t, o), want)
			}
		}
	}
	one = write(authored, one, status(`{"n":2}`))
	check(one, "replicaset")
	if rs.Wrote() != rv(t, one) {
		t.Fatalf("the author holds revision %d, want %d", rs.Wrote(), rv(t, one))
	}
	one = write(bus.WithAuthor(ctx, bus.NewAuthor("replicaset", s.Resource(), "default.two")), one, status(`{"n":2.5}`))
	check(one, "")
	one = write(bus.WithAuthor(ctx, bus.NewAuthor("replicaset", "gadgets.example.com", "default.one")), one, status(`{"n":2.7}`))
	check(one, "")
	one = write(authored, one, func(o *object.Object) { o.Spec = json.RawMessage(`{"size":2}`); o.Status = json.RawMessage(`{"n":3}`) })
	check(one, "")
	one = write(ctx, one, status(`{"n":4}`))
	check(one, "")
	one = write(bus.WithAuthor(ctx, bus.NewAuthor("deployment", s.Resource(), "default.one")), one, status(`{"n":5}`))
	check(one, "deployment")
}
