package object

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"slices"

	json "github.com/go-json-experiment/json/v1"
)

// envelope is Object without its JSON methods, for the standard codec.
type envelope Object

// envelopeKeys are the top-level members Object holds in fields of its own.
var envelopeKeys = []string{"apiVersion", "kind", "metadata", "spec", "status"}

// Decode reads one object from JSON; null gives nil. It is the fast path
// for stores, which decode every value they watch: an object with no
// top-level members beyond the envelope's is read in one pass.
func Decode(data []byte) (*Object, error) {
	if onlyEnvelope(data) {
		var o *envelope
		if err := json.Unmarshal(data, &o); err != nil {
			return nil, err
		}
		return (*Object)(o), nil
	}
	// Members of their own, or not an object at all: the full path.
	var members map[string]stdjson.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, err
	}
	if members == nil {
		return nil, nil
	}
	full := &Object{}
	if err := json.Unmarshal(data, (*envelope)(full)); err != nil {
		return nil, err
	}
	for k, v := range members {
		if slices.Contains(envelopeKeys, k) {
			continue
		}
		if full.Fields == nil {
			full.Fields = map[string]stdjson.RawMessage{}
		}
		full.Fields[k] = v
	}
	return full, nil
}

// Encode writes an object as JSON, its Fields among the envelope's members.
func Encode(o *Object) ([]byte, error) {
	b, err := json.Marshal((*envelope)(o))
	if err != nil || len(o.Fields) == 0 {
		return b, err
	}
	keys := make([]string, 0, len(o.Fields))
	for k := range o.Fields {
		if !slices.Contains(envelopeKeys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.Grow(len(b) + 64*len(keys))
	buf.Write(b[:len(b)-1]) // without its closing brace
	for _, k := range keys {
		v := o.Fields[k]
		if len(v) == 0 {
			continue
		}
		name, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(name)
		buf.WriteByte(':')
		if err := json.Compact(&buf, v); err != nil {
			return nil, fmt.Errorf("object: field %s: %w", k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON writes the envelope and the Fields.
func (o Object) MarshalJSON() ([]byte, error) { return Encode(&o) }

// UnmarshalJSON reads the envelope, and every other top-level member into Fields.
func (o *Object) UnmarshalJSON(data []byte) error {
	p, err := Decode(data)
	if err != nil {
		return err
	}
	if p == nil {
		*o = Object{}
		return nil
	}
	*o = *p
	return nil
}

// Field decodes the top-level member name into v; an absent one leaves v
// unchanged.
func (o *Object) Field(name string, v any) error {
	raw, ok := o.Fields[name]
	if !ok || len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// SetField encodes v as the top-level member name; nil removes it.
func (o *Object) SetField(name string, v any) error {
	if v == nil {
		delete(o.Fields, name)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if o.Fields == nil {
		o.Fields = map[string]stdjson.RawMessage{}
	}
	o.Fields[name] = b
	return nil
}

// onlyEnvelope says whether data is a JSON object whose top-level members
// are all the envelope's, by a scan that skips their values. Anything it
// is unsure of (escapes in a name, malformed input) answers false, which
// costs only the slower path.
func onlyEnvelope(data []byte) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		end := bytes.IndexByte(data[i+1:], '"')
		if end < 0 {
			return false
		}
		name := data[i+1 : i+1+end]
		if bytes.IndexByte(name, '\\') >= 0 || !slices.Contains(envelopeKeys, string(name)) {
			return false
		}
		i = skipSpace(data, i+2+end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		if i = skipValue(data, skipSpace(data, i+1)); i < 0 {
			return false
		}
		i = skipSpace(data, i)
		switch {
		case i >= len(data):
			return false
		case data[i] == '}':
			return true
		case data[i] != ',':
			return false
		}
		i = skipSpace(data, i+1)
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value at i, or -1.
func skipValue(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch c := data[i]; c {
		case '"':
			i++
			for i < len(data) && data[i] != '"' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(data) {
				return -1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
		if depth == 0 && i < len(data) && (data[i-1] == '"' || data[i-1] == '}' || data[i-1] == ']') {
			return i
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}
