package bus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/object"
)

// TestWritesCarryTheirLayout: every write says where its value's parts
// lie, readers decode by it what decoding the whole gives, and a layout
// that does not fit its value is passed over.
func TestWritesCarryTheirLayout(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bustest.Conn(t))
	created, err := s.Create(ctx, widget("default", "a", `{"size":1}`, map[string]string{"app": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, spec, status string) (data []byte, layout string) {
		t.Helper()
		data, layout, err := bus.StoredForTest(ctx, s, created.Key())
		if err != nil {
			t.Fatal(err)
		}
		l := object.ParseLayout(layout)
		if l.Head == 0 {
			t.Fatalf("%s: no layout (header %q)", what, layout)
		}
		part := func(at [2]int) string { return string(data[at[0]:at[1]]) }
		if part(l.Spec) != spec || (status != "" && part(l.Status) != status) {
			t.Fatalf("%s: layout %s places the spec at %q and the status at %q in %s", what, layout, part(l.Spec), part(l.Status), data)
		}
		got, err := s.Get(ctx, created.Key())
		if err != nil {
			t.Fatal(err)
		}
		whole, err := object.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		whole.Metadata.ResourceVersion = got.Metadata.ResourceVersion
		if !reflect.DeepEqual(got, whole) {
			t.Fatalf("%s: read by its layout\n%+v\nwhole\n%+v", what, got, whole)
		}
		return data, layout
	}
	check("created", `{"size":1}`, "")
	next := created.Clone()
	next.Status = json.RawMessage(`{"phase":"Ready"}`)
	updated, err := s.Update(ctx, next, bus.UpdateOptions{Current: created})
	if err != nil {
		t.Fatal(err)
	}
	data, layout := check("its status written", `{"size":1}`, `{"phase":"Ready"}`)

	// The same value under layouts that do not fit it (its status cut
	// short, its spec shifted): read whole, as it is.
	rev, err := strconv.ParseUint(updated.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	short, shifted := object.ParseLayout(layout), object.ParseLayout(layout)
	short.Status[1]--
	shifted.Spec[0]++
	for _, bad := range []object.Layout{short, shifted} {
		if rev, err = bus.PublishWithLayoutForTest(ctx, s, created.Key(), bytes.Clone(data), rev, bad.String()); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, created.Key())
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Status) != `{"phase":"Ready"}` || string(got.Spec) != `{"size":1}` || got.Metadata.Name != "a" {
			t.Fatalf("read under the layout %s that does not fit: %+v", bad, got)
		}
	}
}
