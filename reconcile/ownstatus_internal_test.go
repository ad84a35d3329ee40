package reconcile

import (
	"encoding/json"
	"testing"

	"github.com/homeostat/homeostat/object"
)

func TestOwnStatus(t *testing.T) {
	obj := func(spec, status string) *object.Object {
		return &object.Object{APIVersion: "test/v1", Kind: "Widget", Metadata: object.Meta{Name: "w", Namespace: "default"},
			Spec: json.RawMessage(spec), Status: json.RawMessage(status)}
	}
	before := obj(`{"size":1}`, `{"n":1}`)
	after := obj(`{"size":1}`, `{"n":2}`)
	for _, c := range []struct {
		name string
		ch   Change
		want bool
	}{
		{"its own write of the status", Change{Old: before, New: after, StatusBy: "widgets/a1"}, true},
		{"another controller's", Change{Old: before, New: after, StatusBy: "gadgets/a1"}, false},
		{"its own in another process", Change{Old: before, New: after, StatusBy: "widgets/b2"}, false},
		{"unmarked (a client's, or the state a watch starts from)", Change{Old: before, New: after}, false},
		{"a create", Change{New: after, StatusBy: "widgets/a1"}, false},
		{"a delete", Change{Old: before, StatusBy: "widgets/a1"}, false},
		{"the informer held an older spec", Change{Old: obj(`{"size":2}`, `{"n":1}`), New: after, StatusBy: "widgets/a1"}, false},
		{"the informer held other labels", Change{Old: func() *object.Object {
			o := before.Clone()
			o.Metadata.Labels = map[string]string{"k": "v"}
			return o
		}(), New: after, StatusBy: "widgets/a1"}, false},
		{"nothing changed", Change{Old: after, New: after, StatusBy: "widgets/a1"}, false},
	} {
		if got := ownStatus(c.ch, "widgets/a1"); got != c.want {
			t.Errorf("%s: ownStatus = %v, want %v", c.name, got, c.want)
		}
	}
}
