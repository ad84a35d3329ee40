package object

import (
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	json "github.com/go-json-experiment/json/v1"
)

// unmarshalOnce is the v1 package's decoding but for how it reports
// errors: v1 reads the whole input once to check its syntax before it
// decodes it, so that a syntax error leaves the target as it was, and
// goes on past a member of the wrong type to report the first. Of valid
// input both make the same value; reading it once took a third less time
// per pod.
var unmarshalOnce = jsonv2.JoinOptions(json.DefaultOptionsV1(), json.ReportErrorsWithLegacySemantics(false))

// unmarshal is json.Unmarshal, reading valid input once. A target that is
// not zero, which v1 merges into, goes the v1 way; a zero one that fails
// is zeroed and decoded again the v1 way, for v1's error and the value v1
// leaves beside it.
func unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !rv.Elem().IsZero() {
		return json.Unmarshal(data, v)
	}
	if jsonv2.Unmarshal(data, v, unmarshalOnce) == nil {
		return nil
	}
	rv.Elem().SetZero()
	return json.Unmarshal(data, v)
}
