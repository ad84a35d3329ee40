package api

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/homeostat/homeostat/manifest"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// readKubeBody reads a body of JSON, YAML or, where proto is true,
// protobuf (in Kubernetes' own types, as typed clients send built-in
// kinds) as JSON, and says whether it came as text, whose duplicate keys
// can still be found. Without proto, protobuf is a 415 as for any other
// media type the resource does not take (custom kinds, as in Kubernetes).
func (s *Service) readKubeBody(r *http.Request, proto bool) ([]byte, bool, *apiError) {
	allowed := map[string]bool{"application/json": true, "application/yaml": true, "application/x-yaml": true,
		"text/yaml": true, protobufType: proto}
	want := "application/json or application/yaml"
	if proto {
		want = "application/json, application/yaml or " + protobufType
	}
	data, mt, e := s.readBodyAs(r, allowed, want)
	if e != nil {
		return nil, false, e
	}
	if mt == protobufType {
		j, err := protoToJSON(data)
		if err != nil {
			return nil, false, badRequest("the protobuf body does not decode: %v", err)
		}
		return j, false, nil
	}
	j, e := asJSON(data, mt)
	return j, true, e
}

// asJSON turns a YAML body into JSON; a JSON one comes back as it is.
func asJSON(data []byte, mt string) ([]byte, *apiError) {
	if mt == "application/json" {
		return data, nil
	}
	j, err := manifest.ToJSON(data)
	if err != nil {
		return nil, badRequest("the request body is not a YAML object: %v", err)
	}
	return j, nil
}

// readBodyAs reads a bounded body of one of the allowed media types (want
// says which, for the 415) and returns it with its media type as sent.
func (s *Service) readBodyAs(r *http.Request, allowed map[string]bool, want string) ([]byte, string, *apiError) {
	ct := r.Header.Get("Content-Type")
	mt := "application/json"
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, "", newError(http.StatusUnsupportedMediaType, object.ReasonUnsupportedMediaType, "malformed Content-Type %q", ct)
		}
	}
	if !allowed[mt] {
		return nil, "", newError(http.StatusUnsupportedMediaType, object.ReasonUnsupportedMediaType,
			"Content-Type %q is not supported here; use %s", mt, want)
	}
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, "", newError(http.StatusRequestEntityTooLarge, object.ReasonRequestEntityTooLarge,
				"the request body is larger than the limit of %d bytes", s.maxBody)
		}
		return nil, "", badRequest("reading the request body: %v", err)
	}
	if len(data) == 0 {
		return nil, "", badRequest("the request body is empty")
	}
	return data, mt, nil
}

// decodeObject parses a JSON body into a generic document (for the schema)
// and an Object (for the store).
func decodeObject(data []byte) (map[string]any, *apiError) {
	doc, err := schemas.DecodeJSON(data)
	if err != nil {
		return nil, badRequest("the request body is not valid JSON: %v", err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, badRequest("the request body must be a JSON object")
	}
	return m, nil
}

func toObject(doc map[string]any) (*object.Object, *apiError) {
	b, err := schemas.EncodeJSON(doc)
	if err != nil {
		return nil, badRequest("re-encoding the object: %v", err)
	}
	o, err := object.Decode(b)
	if err != nil || o == nil {
		return nil, badRequest("the object does not fit the envelope: %v", err)
	}
	return o, nil
}

func toDoc(o *object.Object) (map[string]any, *apiError) {
	b, err := object.Encode(o)
	if err != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "encoding: %v", err)
	}
	return decodeObject(b)
}
