package object

import (
	stdjson "encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	json "github.com/go-json-experiment/json/v1"
)

// sample has members of the kinds objects have: nested, mapped, listed,
// raw, with methods of their own.
type sample struct {
	Name   string             `json:"name"`
	Count  int                `json:"count"`
	Labels map[string]string  `json:"labels"`
	Items  []struct{ A int }  `json:"items"`
	Raw    stdjson.RawMessage `json:"raw"`
	When   *time.Time         `json:"when"`
	Meta   Meta               `json:"meta"`
}

var unmarshalSeeds = []string{
	`{"name":"a","count":1,"labels":{"x":"y"},"items":[{"A":1}],"raw":{"z":[1]},"when":"2026-01-01T00:00:00Z","meta":{"name":"m","uid":"u"}}`,
	// A member of the wrong type: v1 goes on and fills the rest.
	`{"name":"a","count":"x","labels":{"k":"v"},"items":[{"A":"s"},{"A":2}]}`,
	// A syntax error late: v1 leaves the target as it was.
	`{"name":"a","labels":{"k":"v"},"count":1`,
	`{"name":"a"} x`,
	`{"name":"a","name":"b","NAME":"c"}`,
	`{"when":"yesterday","name":"a"}`,
	"{\"name\":\"\xff\"}",
	`{"meta":{"creationTimestamp":"not a time"},"count":2}`,
	`null`, `[]`, `{}`, `"s"`,
}

// unmarshal gives what the v1 package gives, value and error alike.
func FuzzUnmarshalAsV1(f *testing.F) {
	for _, s := range unmarshalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want sample
		gerr := unmarshal(data, &got)
		werr := json.Unmarshal(data, &want)
		if fmt.Sprintf("%T %v", gerr, gerr) != fmt.Sprintf("%T %v", werr, werr) {
			t.Fatalf("error %T %v, v1's %T %v", gerr, gerr, werr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, v1 %+v", got, want)
		}
	})
}

// A target holding values is merged into as v1 merges.
func TestUnmarshalMergesAsV1(t *testing.T) {
	for _, s := range unmarshalSeeds {
		got := sample{Name: "before", Labels: map[string]string{"old": "1"}}
		want := sample{Name: "before", Labels: map[string]string{"old": "1"}}
		gerr := unmarshal([]byte(s), &got)
		werr := json.Unmarshal([]byte(s), &want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v (%v), v1 %+v (%v)", s, got, gerr, want, werr)
		}
	}
}
