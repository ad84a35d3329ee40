package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/object"
)

// A JSON list streamed through its buffer holds every item in order, the
// ones it had to encode too, and leaves the caller's encodings (a cache's)
// as they were.
func TestWriteListJSONStreamsEveryItem(t *testing.T) {
	const n = 40 // of 4 KB each: the body is larger than the buffer
	list := object.List{APIVersion: "v1", Kind: "ConfigMapList", Metadata: object.ListMeta{ResourceVersion: "7"}}
	items := make([][]byte, n)
	for i := range n {
		o := &object.Object{APIVersion: "v1", Kind: "ConfigMap", Metadata: object.Meta{Name: fmt.Sprintf("cm-%02d", i)},
			Fields: map[string]json.RawMessage{"data": json.RawMessage(`{"v":"` + strings.Repeat("x", 4096) + `"}`)}}
		list.Items = append(list.Items, o)
		if i%3 != 0 { // every third left for the writer to encode
			b, err := object.Encode(o)
			if err != nil {
				t.Fatal(err)
			}
			items[i] = b
		}
	}
	rec := httptest.NewRecorder()
	writeListJSON(rec, list, items)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != mediaJSON {
		t.Fatalf("answered %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec.Body.Len() <= listBuffer {
		t.Fatalf("the body is %d bytes, no more than one buffer", rec.Body.Len())
	}
	var got struct {
		Kind     string `json:"kind"`
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Data     map[string]string     `json:"data"`
		} `json:"items"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("the list is not JSON: %v", err)
	}
	if got.Kind != "ConfigMapList" || got.Metadata.ResourceVersion != "7" || len(got.Items) != n {
		t.Fatalf("got %s at %q with %d items", got.Kind, got.Metadata.ResourceVersion, len(got.Items))
	}
	for i, it := range got.Items {
		if want := fmt.Sprintf("cm-%02d", i); it.Metadata.Name != want || len(it.Data["v"]) != 4096 {
			t.Fatalf("item %d is %s with %d bytes of data, want %s", i, it.Metadata.Name, len(it.Data["v"]), want)
		}
	}
	for i := 0; i < n; i += 3 {
		if items[i] != nil {
			t.Fatalf("the caller's encoding of item %d was filled in", i)
		}
	}
}
