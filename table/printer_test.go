package table

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/schemas"
)

func TestEval(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(`{"spec":{"replicas":3,"color":"blue","tags":["a","b"]},
		"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Synced","status":"False"}]}}`), &doc); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want []any
	}{
		{".spec.replicas", []any{3.0}},
		{".spec.color", []any{"blue"}},
		{"{.spec.color}", []any{"blue"}},
		{".spec.tags[1]", []any{"b"}},
		{".spec.tags[-1]", []any{"b"}},
		{".spec.tags[*]", []any{"a", "b"}},
		{".spec.tags[5]", nil},
		{".status.conditions[?(@.type==\"Synced\")].status", []any{"False"}},
		{".status.conditions[?(@.type=='Ready')].status", []any{"True"}},
		{".status.conditions[*].type", []any{"Ready", "Synced"}},
		{".spec.missing", nil},
		{".spec.color.deeper", nil},
		{"spec", nil},
	}
	for _, c := range cases {
		if got := Eval(doc, c.path); !cmp.Equal(got, c.want) {
			t.Errorf("Eval(%s) = %v, want %v", c.path, got, c.want)
		}
	}
}

func TestPrintedCells(t *testing.T) {
	cols := Printed([]schemas.PrinterColumn{{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
		{Name: "Tags", Type: "string", JSONPath: ".spec.tags[*]"}, {Name: "Since", Type: "date", JSONPath: ".status.since"},
		{Name: "Gone", Type: "string", JSONPath: ".status.none"}})
	doc := map[string]any{"spec": map[string]any{"replicas": 2.0, "tags": []any{"x", "y"}},
		"status": map[string]any{"since": time.Now().Add(-10*time.Minute - 5*time.Second).UTC().Format(time.RFC3339)}}
	var got []any
	for _, c := range cols[1:] {
		got = append(got, c.Cell(nil, doc))
	}
	if want := []any{int64(2), "x,y", "10m", nil}; !cmp.Equal(got, want) {
		t.Fatalf("cells %v, want %v", got, want)
	}
	if cols[0].Name != "Name" {
		t.Fatalf("first column %q", cols[0].Name)
	}
}
