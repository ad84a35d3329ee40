package table

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/homeostat/homeostat/object"
)

// What each row carries of its object (the includeObject parameter).
const (
	IncludeNone     = "None"
	IncludeMetadata = "Metadata" // Kubernetes' default
	IncludeObject   = "Object"
)

// Options say what a Table holds beside its rows.
type Options struct {
	Include         string
	ResourceVersion string
	Continue        string
}

// New renders objects of one kind as a Table with the kind's columns
// (Columns, or Printed for a custom kind that declares them).
func New(cols []Column, items []*object.Object, opts Options) (*metav1.Table, error) {
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: opts.ResourceVersion, Continue: opts.Continue},
		Rows:     make([]metav1.TableRow, 0, len(items)),
	}
	for _, c := range cols {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{
			Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority})
	}
	for _, o := range items {
		row, err := newRow(o, cols, opts.Include)
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// DocOf is an object as decoded JSON, what a Column's Cell reads; nil if
// it does not encode.
func DocOf(o *object.Object) map[string]any {
	b, err := object.Encode(o)
	if err != nil {
		return nil
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil
	}
	return doc
}

func newRow(o *object.Object, cols []Column, include string) (metav1.TableRow, error) {
	doc := DocOf(o)
	if doc == nil {
		return metav1.TableRow{}, fmt.Errorf("table: %s does not encode", o.Key())
	}
	row := metav1.TableRow{Cells: make([]any, len(cols))}
	for i, c := range cols {
		row.Cells[i] = c.Cell(o, doc)
	}
	switch include {
	case IncludeObject:
		b, err := object.Encode(o)
		if err != nil {
			return metav1.TableRow{}, err
		}
		row.Object = runtime.RawExtension{Raw: b}
	case IncludeNone:
	default:
		meta, err := json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.Metadata})
		if err != nil {
			return metav1.TableRow{}, err
		}
		row.Object = runtime.RawExtension{Raw: meta}
	}
	return row, nil
}

// CheckInclude refuses an includeObject value Kubernetes does not define.
func CheckInclude(v string) error {
	switch v {
	case "", IncludeNone, IncludeMetadata, IncludeObject:
		return nil
	}
	return fmt.Errorf("includeObject=%q: must be None, Metadata or Object", v)
}
