package bus_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// TestWatchSkippingStatus: a watch that skips status writes still starts
// from every object as it stands, then passes over the changes made to a
// status alone, and not over the others.
func TestWatchSkippingStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, bustest.Conn(t))
	one, err := s.Create(ctx, widget("default", "one", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	setStatus := func(o *object.Object, status string) *object.Object {
		t.Helper()
		o = o.Clone()
		o.Status = json.RawMessage(status)
		o, err := s.Update(ctx, o, bus.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	one = setStatus(one, `{"ready":false}`)
	ch, err := s.Watch(ctx, bus.WatchOptions{SkipStatus: true})
	if err != nil {
		t.Fatal(err)
	}
	if ev := expect(t, ch, bus.Added, "one"); string(ev.Object.Status) != `{"ready":false}` {
		t.Fatalf("the initial state has status %s, want the one last written", ev.Object.Status)
	}
	expect(t, ch, bus.Synced, "")
	one = setStatus(one, `{"ready":true}`)
	one.Metadata.Labels = map[string]string{"k": "v"}
	one.Status = json.RawMessage(`{"ready":true,"also":"labels"}`)
	if _, err := s.Update(ctx, one, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := expect(t, ch, bus.Modified, "one"); ev.Object.Metadata.Labels["k"] != "v" {
		t.Fatalf("the status write came through: %s", ev.Object.Status)
	}
	if _, err := s.Create(ctx, widget("default", "two", `{}`, nil)); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, bus.Added, "two")
}
