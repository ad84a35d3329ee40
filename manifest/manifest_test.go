package manifest_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/manifest"
)

func TestDecodeMultiDocument(t *testing.T) {
	in := `# leading comment
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
# only a comment
---
{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}
--- 
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: c}}
- {apiVersion: v1, kind: Namespace, metadata: {name: d}}
`
	docs, err := manifest.DecodeBytes([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var idx []int
	for _, d := range docs {
		var o struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := json.Unmarshal(d.JSON, &o); err != nil {
			t.Fatal(err)
		}
		names = append(names, o.Metadata.Name)
		idx = append(idx, d.Index)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, names); diff != "" {
		t.Fatalf("names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 3, 4, 4}, idx); diff != "" {
		t.Fatalf("indexes (-want +got):\n%s", diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		notObj   bool
	}{
		{"list at top", "- a\n- b\n", true},
		{"scalar", "hello\n", true},
		{"bad yaml", "a: [1, 2\n", false},
		{"a key twice", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\nkind: ConfigMap\n", false},
		{"a nested key twice", "metadata: {name: a, name: b}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manifest.DecodeBytes([]byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, manifest.ErrNotObject); got != tc.notObj {
				t.Fatalf("errors.Is(ErrNotObject) = %v for %v", got, err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"---\n---\n",
		`{"kind":"List","items":[{"a":1}]}`,
		"a: &x [1]\nb: *x\n",
		"kind: List\nitems: [1]\n",
		"\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		docs, err := manifest.DecodeBytes(in)
		if err != nil {
			return
		}
		for _, d := range docs {
			var m map[string]any
			if err := json.Unmarshal(d.JSON, &m); err != nil {
				t.Fatalf("decoded document is not a JSON object: %q: %v", d.JSON, err)
			}
		}
	})
}
