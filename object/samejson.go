package object

import (
	"bytes"
	stdjson "encoding/json"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// SameJSON reports whether two JSON documents are semantically equal,
// ignoring formatting and key order.
func SameJSON(a, b stdjson.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true // the common case, decided without decoding
	}
	if isNullish(a) || isNullish(b) {
		return isNullish(a) && isNullish(b)
	}
	return sameValue(a, b)
}

// sameValue compares two JSON values that differ in their bytes. Two
// objects are compared member by member at their top level, so that
// what they share byte for byte (a pod's containers, when a bind adds
// its node) is only scanned; members that differ, and values that are
// not objects, in canonical form. Below the top level canonical form
// alone: comparing member by member there would read a deep value once
// a level.
func sameValue(a, b []byte) bool {
	if same, ok := sameMembers(a, b); ok {
		return same
	}
	return sameCanonical(a, b)
}

// sameCanonical compares two values in canonical form (RFC 8785: members
// sorted, numbers and strings spelled one way), where equal values have
// equal bytes. What canonical form cannot read (duplicate names, invalid
// UTF-8) compares by its bytes. Integers keep their digits, so two beyond
// 2^53 that a float64 cannot tell apart still differ.
func sameCanonical(a, b []byte) bool {
	x, y := jsontext.Value(bytes.Clone(a)), jsontext.Value(bytes.Clone(b))
	exact := jsontext.CanonicalizeRawInts(false)
	if x.Canonicalize(exact) != nil || y.Canonicalize(exact) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(x, y)
}

// member is one member of a JSON object: its name as written (quoted)
// and its value, both slices of the object's bytes.
type member struct{ name, value []byte }

// sameMembers compares two JSON objects member by member; ok is false
// when either is not an object it reads plainly (not an object, a name
// written with an escape, a name given twice, invalid JSON), for the
// canonical comparison to decide.
func sameMembers(a, b []byte) (same, ok bool) {
	if firstByte(a) != '{' || firstByte(b) != '{' {
		return false, false
	}
	r := memberReaders.Get().(*memberReader)
	defer memberReaders.Put(r)
	ma, ok := r.members(a, r.a[:0])
	r.a = ma
	if !ok {
		return false, false
	}
	mb, ok := r.members(b, r.b[:0])
	r.b = mb
	if !ok {
		return false, false
	}
	if len(ma) != len(mb) {
		return false, true // names are unique, so the sets differ
	}
	var byName map[string][]byte // made only when the orders differ
	for i, x := range ma {
		var y []byte
		switch {
		case bytes.Equal(mb[i].name, x.name): // the same order, as encodings have
			y = mb[i].value
		default:
			if byName == nil {
				byName = make(map[string][]byte, len(mb))
				for _, m := range mb {
					byName[string(m.name)] = m.value
				}
			}
			v, found := byName[string(x.name)]
			if !found {
				return false, true
			}
			y = v
		}
		if !bytes.Equal(x.value, y) && !sameCanonical(x.value, y) {
			return false, true
		}
	}
	return true, true
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// memberReader reads objects' members with buffers kept between uses.
type memberReader struct {
	src  bytes.Reader
	dec  jsontext.Decoder
	a, b []member
}

var memberReaders = sync.Pool{New: func() any { return new(memberReader) }}

// members appends the members of the JSON object raw to ms; false when
// raw is not one object, or a name is written with an escape (two
// spellings of one name would compare as different names).
func (r *memberReader) members(raw []byte, ms []member) ([]member, bool) {
	r.src.Reset(raw)
	r.dec.Reset(&r.src)
	d := &r.dec
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return ms, false
	}
	for d.PeekKind() == '"' {
		name, ok := readRaw(d, raw)
		if !ok || bytes.IndexByte(name, '\\') >= 0 {
			return ms, false
		}
		value, ok := readRaw(d, raw)
		if !ok {
			return ms, false
		}
		ms = append(ms, member{name, value})
	}
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '}' {
		return ms, false
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return ms, false // trailing data
	}
	return ms, true
}

// readRaw reads the next value and returns it as a slice of raw, which
// outlives the decoder's buffer.
func readRaw(d *jsontext.Decoder, raw []byte) ([]byte, bool) {
	v, err := d.ReadValue()
	if err != nil {
		return nil, false
	}
	end := int(d.InputOffset())
	if end > len(raw) || end < len(v) {
		return nil, false
	}
	return raw[end-len(v) : end], true
}
