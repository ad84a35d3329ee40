package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// stampTracker records, as its managed fields, who wrote and whether the
// write had a live object: enough to see the bus ask it, and with what.
type stampTracker struct{}

func (stampTracker) Track(manager, subresource string, live, next *object.Object) *object.Object {
	next.Metadata.ManagedFields = json.RawMessage(fmt.Sprintf(`[{"manager":%q,"over":%t,"sub":%q}]`, manager, live != nil, subresource))
	return next
}

// TestWriterRecordsItsWrites: creates, pipelined creates and updates made
// with a context naming a writer are tracked under it; writes without one
// are stored as they come.
func TestWriterRecordsItsWrites(t *testing.T) {
	s := newStore(t, bustest.Conn(t))
	ctx := bus.WithWriter(context.Background(), bus.Writer{Manager: "ctrl", Fields: stampTracker{}})

	created, err := s.Create(ctx, widget("default", "a", `{"size":1}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.Get(ctx, "default.a")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(stored.Metadata.ManagedFields); got != `[{"manager":"ctrl","over":false,"sub":""}]` {
		t.Fatalf("a create's managed fields: %s", got)
	}
	created.Spec = json.RawMessage(`{"size":2}`)
	if _, err := s.Update(ctx, created, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if stored, err = s.Get(ctx, "default.a"); err != nil {
		t.Fatal(err)
	}
	if got := string(stored.Metadata.ManagedFields); got != `[{"manager":"ctrl","over":true,"sub":""}]` {
		t.Fatalf("an update's managed fields: %s", got)
	}
	stored.Status = json.RawMessage(`{"ready":true}`)
	if _, err := s.Update(ctx, stored, bus.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if stored, err = s.Get(ctx, "default.a"); err != nil {
		t.Fatal(err)
	}
	if got := string(stored.Metadata.ManagedFields); got != `[{"manager":"ctrl","over":true,"sub":"status"}]` {
		t.Fatalf("a status update's managed fields: %s", got)
	}

	many, errs := s.CreateMany(ctx, []*object.Object{widget("default", "b", `{}`, nil)}, bus.CreateOptions{})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got := string(many[0].Metadata.ManagedFields); got != `[{"manager":"ctrl","over":false,"sub":""}]` {
		t.Fatalf("a pipelined create's managed fields: %s", got)
	}

	plain := widget("default", "c", `{}`, nil)
	plain.Metadata.ManagedFields = json.RawMessage(`[{"manager":"kubectl"}]`)
	if _, err := s.Create(context.Background(), plain); err != nil {
		t.Fatal(err)
	}
	if stored, err = s.Get(ctx, "default.c"); err != nil {
		t.Fatal(err)
	}
	if got := string(stored.Metadata.ManagedFields); got != `[{"manager":"kubectl"}]` {
		t.Fatalf("a write naming no writer was tracked: %s", got)
	}
}
