package api

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
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
