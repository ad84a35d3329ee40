package api

import (
	"bytes"
	"encoding/json"

	"github.com/homeostat/homeostat/object"
)

// immutableConfig refuses an update of a ConfigMap or Secret marked
// immutable that changes its values or unmarks it, as Kubernetes does:
// pods may then read it once and never again.
func immutableConfig(ref *resourceRef, n, cur *object.Object) *apiError {
	if ref.res.Group != "" || (ref.res.Kind != "ConfigMap" && ref.res.Kind != "Secret") || !isImmutable(cur) {
		return nil
	}
	if !isImmutable(n) {
		return invalidField(ref, n.Metadata.Name, "immutable", "immutable", "field is immutable when `immutable` is set")
	}
	for _, f := range []string{"data", "binaryData"} {
		if !sameField(n.Fields[f], cur.Fields[f]) {
			return invalidField(ref, n.Metadata.Name, f, "immutable", "field is immutable when `immutable` is set")
		}
	}
	return nil
}

func isImmutable(o *object.Object) bool {
	var b bool
	return json.Unmarshal(o.Fields["immutable"], &b) == nil && b
}

// sameField compares two JSON values, an absent one as an empty object.
func sameField(a, b json.RawMessage) bool {
	empty := func(r json.RawMessage) bool {
		return len(r) == 0 || bytes.Equal(r, []byte("{}")) || bytes.Equal(r, []byte("null"))
	}
	if empty(a) || empty(b) {
		return empty(a) && empty(b)
	}
	return object.SameJSON(a, b)
}
