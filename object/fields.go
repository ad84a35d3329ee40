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

// decoding is Object with its other top-level members gathered into
// Fields as they are read (a struct conversion ignores the tags).
type decoding struct {
	APIVersion string                        `json:"apiVersion"`
	Kind       string                        `json:"kind"`
	Metadata   Meta                          `json:"metadata"`
	Spec       stdjson.RawMessage            `json:"spec,omitempty"`
	Status     stdjson.RawMessage            `json:"status,omitempty"`
	Fields     map[string]stdjson.RawMessage `json:",unknown"`
}

// Decode reads one object from JSON; null gives nil. Stores decode every
// value they watch, so it reads in one pass, members of their own
// (RBAC's rules, a ConfigMap's data) included.
func Decode(data []byte) (*Object, error) {
	var o *decoding
	if err := unmarshal(data, &o); err != nil {
		return nil, err
	}
	if o != nil {
		o.Metadata.ManagedFields = intern(managedFields, o.Metadata.ManagedFields)
		o.Spec = intern(specs, o.Spec)
	}
	return (*Object)(o), nil
}

// Encode writes an object as JSON, its Fields among the envelope's members.
func Encode(o *Object) ([]byte, error) {
	if len(o.Fields) == 0 {
		return encodeParts(o, false, false, false)
	}
	b, err := json.Marshal((*envelope)(o))
	if err != nil {
		return nil, err
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
	return unmarshal(raw, v)
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
