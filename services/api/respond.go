package api

import (
	"bufio"
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/homeostat/homeostat/object"
)

// Media types an object response may take.
const (
	mediaJSON = "application/json"
	mediaYAML = "application/yaml"
)

// responseType is the media type the client asks for first among those an
// object response takes: JSON (also for */* or no Accept), YAML, or
// protobuf.
func responseType(r *http.Request) string {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["as"] != "" {
			continue
		}
		switch mt {
		case mediaJSON, "*/*", "application/*":
			return mediaJSON
		case mediaYAML, "application/x-yaml", "text/yaml":
			return mediaYAML
		case protobufType:
			return protobufType
		}
	}
	return mediaJSON
}

// writeObject answers with an object or a list in the media type the
// client asks for. Protobuf holds a built-in kind in Kubernetes' own type,
// and so only Kubernetes' fields; a kind Kubernetes does not have (a
// custom one, a ResourceDefinition) goes as JSON, which every client
// reads, as the Content-Type says.
func writeObject(w http.ResponseWriter, r *http.Request, code int, v any) {
	want := responseType(r)
	if want == mediaJSON {
		writeJSON(w, code, v)
		return
	}
	j, err := json.Marshal(v)
	if err != nil {
		writeJSON(w, code, v)
		return
	}
	var body []byte
	if want == mediaYAML {
		body, err = yaml.JSONToYAML(j)
	} else {
		body, err = jsonToProto(j)
	}
	if err != nil || body == nil {
		writeJSON(w, code, v)
		return
	}
	w.Header().Set("Content-Type", want)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// writeListJSON answers with list as JSON, its items already encoded (an
// item encoded as nil is encoded here): a list of many objects spends its
// time encoding them, and their JSON changes only when they do. The body
// is streamed through a small buffer rather than made whole first: for
// 10,000 pods that was 21 MB allocated and copied for every list, and
// nothing sent until it was done.
func writeListJSON(w http.ResponseWriter, list object.List, items [][]byte) {
	head, err := json.Marshal(struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   object.ListMeta `json:"metadata"`
	}{list.APIVersion, list.Kind, list.Metadata})
	if err != nil {
		writeJSON(w, http.StatusOK, list)
		return
	}
	// Whatever fails to encode fails before a byte is sent; items may be
	// a cache's, so what is encoded here goes in a copy.
	copied := false
	for i, b := range items {
		if b != nil {
			continue
		}
		if b, err = object.Encode(list.Items[i]); err != nil {
			writeJSON(w, http.StatusOK, list)
			return
		}
		if !copied {
			items, copied = slices.Clone(items), true
		}
		items[i] = b
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(http.StatusOK)
	body := bufio.NewWriterSize(w, listBuffer)
	_, _ = body.Write(head[:len(head)-1])
	_, _ = body.WriteString(`,"items":[`)
	for i, b := range items {
		if i > 0 {
			_ = body.WriteByte(',')
		}
		_, _ = body.Write(b)
	}
	_, _ = body.WriteString("]}\n")
	_ = body.Flush()
}

// listBuffer is how much of a list is sent at a time.
const listBuffer = 64 << 10

// jsonToProto encodes JSON of a built-in kind (or its list) as protobuf,
// or returns nil when Kubernetes has no such type.
func jsonToProto(j []byte) ([]byte, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, nil
	}
	gvk := gv.WithKind(tm.Kind)
	obj, err := protoScheme.New(gvk)
	if err != nil {
		return nil, nil
	}
	if err := json.Unmarshal(j, obj); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	var b strings.Builder
	if err := protoCodec.Encode(obj, &b); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}
