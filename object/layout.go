package object

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	json "github.com/go-json-experiment/json/v1"
)

// Layout says where an encoding by EncodeLayout holds its parts, so that
// a reader that trusts its writer decodes the metadata alone and takes
// the managed fields, spec and status as the bytes they are: reading
// them was about half of decoding a pod, and every process that watches
// pods decodes each of their changes. The zero Layout says nothing, and
// a reader decodes the whole.
type Layout struct {
	// Head is where the metadata's last member but the managed fields
	// ends: the encoding up to it, closed with "}}", is an object of
	// apiVersion, kind and metadata.
	Head int
	// Each range is a member's value as [start, end), {0, 0} when absent.
	ManagedFields, Spec, Status [2]int
}

// What precedes each part, in the order the encoding holds them.
const (
	managedFieldsName = `,"managedFields":`
	specName          = `,"spec":`
	statusName        = `,"status":`
)

// EncodeLayout is Encode, and where its encoding holds each part.
func EncodeLayout(o *Object) ([]byte, Layout, error) {
	b, err := Encode(o)
	if err != nil || len(o.Fields) > 0 {
		return b, Layout{}, err
	}
	return b, layoutOf(b, o), nil
}

// EncodeLayoutOver is EncodeLayout of o, a change to prev, an object
// read from a store: each part of o (managed fields, spec, status) that
// is prev's byte for byte is written as it is, where EncodeLayout would
// read it through again to check and compact it (the spec, the larger
// half of a pod's status write). A store's parts are what an encoding
// wrote, checked then; so the encoding is EncodeLayout's, byte for byte,
// for parts that came that way. A nil prev is EncodeLayout.
func EncodeLayoutOver(o, prev *Object) ([]byte, Layout, error) {
	if prev == nil || len(o.Fields) > 0 {
		return EncodeLayout(o)
	}
	keepFields, keepSpec, keepStatus := samePart(o.Metadata.ManagedFields, prev.Metadata.ManagedFields),
		samePart(o.Spec, prev.Spec), samePart(o.Status, prev.Status)
	if !keepFields && !keepSpec && !keepStatus {
		return EncodeLayout(o)
	}
	b, err := encodeParts(o, keepFields, keepSpec, keepStatus)
	if err != nil {
		return nil, Layout{}, err
	}
	return b, layoutOf(b, o), nil
}

// encodeParts encodes o, an object without members of its own (Fields),
// from its head and its parts, each written as it is when kept, else as
// Encode's encoder writes a raw value.
func encodeParts(o *Object, keepFields, keepSpec, keepStatus bool) ([]byte, error) {
	// Room for the head and the parts as they are, so that the encoding
	// grows once, not with each part.
	b := make([]byte, 0, headSize(o)+len(managedFieldsName)+len(o.Metadata.ManagedFields)+
		len(specName)+len(o.Spec)+len(statusName)+len(o.Status))
	b, err := appendEncodedHead(b, o)
	if err != nil {
		return nil, err
	}
	// {"apiVersion":…,"kind":…,"metadata":{"name":…}}, its last two
	// braces put back after the parts that go inside each: the metadata
	// always has a member (its name) before the managed fields.
	b = b[:len(b)-2]
	if b, err = appendPart(b, managedFieldsName, o.Metadata.ManagedFields, keepFields); err != nil {
		return nil, err
	}
	b = append(b, '}')
	if b, err = appendPart(b, specName, o.Spec, keepSpec); err != nil {
		return nil, err
	}
	if b, err = appendPart(b, statusName, o.Status, keepStatus); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendPart appends the member name: raw (none when raw is empty, as
// omitempty leaves it out), raw as it is or as Encode writes it.
func appendPart(b []byte, name string, raw []byte, asIs bool) ([]byte, error) {
	if len(raw) == 0 {
		return b, nil
	}
	b = append(b, name...)
	if asIs {
		return append(b, raw...), nil
	}
	// Formatted as Encode's encoder writes a raw value, and appended to
	// b without a copy of its own in between.
	out, err := jsontext.AppendFormat(b, raw, json.DefaultOptionsV1())
	if err != nil {
		return nil, fmt.Errorf("object: %s %w", strings.Trim(name, `,":`), err)
	}
	return out, nil
}

// layoutOf finds o's parts in b, its encoding, from the end: a part that
// o holds as Encode writes it (compact, as decoding stored bytes or
// encoding a value leaves it) lies where its length says. A part o holds
// otherwise (spaced, say) leaves no layout.
func layoutOf(b []byte, o *Object) Layout {
	var l Layout
	end, ok := len(b)-1, true // before the object's closing brace
	if end, ok = placeBefore(b, end, statusName, o.Status, &l.Status); !ok {
		return Layout{}
	}
	if end, ok = placeBefore(b, end, specName, o.Spec, &l.Spec); !ok {
		return Layout{}
	}
	if end--; end < 0 || b[end] != '}' { // the metadata's brace
		return Layout{}
	}
	if end, ok = placeBefore(b, end, managedFieldsName, o.Metadata.ManagedFields, &l.ManagedFields); !ok {
		return Layout{}
	}
	l.Head = end
	if !l.fits(b) {
		return Layout{}
	}
	return l
}

// placeBefore places the member name: raw ending at end of b, when b
// holds it there as raw is (an empty raw is no member, as omitempty
// leaves it out), and returns where the member begins.
func placeBefore(b []byte, end int, name string, raw []byte, at *[2]int) (int, bool) {
	if len(raw) == 0 {
		return end, true
	}
	start := end - len(raw)
	if start-len(name) < 0 || !bytes.Equal(b[start:end], raw) || string(b[start-len(name):start]) != name {
		return 0, false
	}
	*at = [2]int{start, end}
	return start - len(name), true
}

// DecodeLayout is Decode of data that EncodeLayout wrote with layout l:
// the metadata is decoded, the rest taken as written. A layout that does
// not fit data decodes it whole.
func DecodeLayout(data []byte, l Layout) (*Object, error) {
	if !l.fits(data) {
		return Decode(data)
	}
	// The head is decoded from a buffer used again: decoding keeps none
	// of its bytes.
	buf := heads.Get().(*[]byte)
	b := append(append((*buf)[:0], data[:l.Head]...), '}', '}')
	o, ok := parseHead(b)
	var err error
	if !ok {
		err = unmarshal(b, &o)
	}
	*buf = b
	heads.Put(buf)
	if err != nil || o == nil || o.Spec != nil || o.Status != nil || o.Fields != nil {
		return Decode(data)
	}
	(*Object)(o).takeParts(data, l)
	return (*Object)(o), nil
}

// takeParts sets o's managed fields, spec and status to those of data,
// which l fits, as they are written there.
func (o *Object) takeParts(data []byte, l Layout) {
	if mf := l.ManagedFields; mf[1] > 0 {
		o.Metadata.ManagedFields = internCopy(managedFields, data[mf[0]:mf[1]])
	}
	if s := l.Spec; s[1] > 0 {
		o.Spec = internCopy(specs, data[s[0]:s[1]])
	}
	if s := l.Status; s[1] > 0 {
		o.Status = bytes.Clone(data[s[0]:s[1]])
	}
}

// Parts returns the spec and status of data, encoded with layout l, as
// slices of data (nil when absent); false when l does not fit data.
func (l Layout) Parts(data []byte) (spec, status []byte, ok bool) {
	if !l.fits(data) {
		return nil, nil, false
	}
	if s := l.Spec; s[1] > 0 {
		spec = data[s[0]:s[1]]
	}
	if s := l.Status; s[1] > 0 {
		status = data[s[0]:s[1]]
	}
	return spec, status, true
}

var heads = sync.Pool{New: func() any { return new([]byte) }}

// fits reports whether l could be data's layout: its parts in order,
// each after its member's name, none of them null (which a decoding
// takes otherwise), and the object closed after the last. It checks the
// places, not the JSON: the writer is trusted to have written it.
func (l Layout) fits(data []byte) bool {
	if l.Head <= 0 || len(data) < l.Head+2 || data[len(data)-1] != '}' {
		return false
	}
	pos, ok := placed(data, l.Head, managedFieldsName, l.ManagedFields)
	if !ok || data[pos] != '}' { // the metadata's brace
		return false
	}
	if pos, ok = placed(data, pos+1, specName, l.Spec); !ok {
		return false
	}
	if pos, ok = placed(data, pos, statusName, l.Status); !ok {
		return false
	}
	return pos == len(data)-1
}

// placed checks one part of a layout at pos, absent or its member's name
// then its value at at, and returns where it ends.
func placed(data []byte, pos int, name string, at [2]int) (int, bool) {
	if at == [2]int{} {
		return pos, true
	}
	start, end := at[0], at[1]
	if start-len(name) != pos || end <= start || end >= len(data) ||
		string(data[pos:start]) != name || string(data[start:end]) == "null" {
		return 0, false
	}
	return end, true
}

// String writes l as a header value: its seven offsets.
func (l Layout) String() string {
	if l.Head == 0 {
		return ""
	}
	var b strings.Builder
	for i, n := range []int{l.Head, l.ManagedFields[0], l.ManagedFields[1], l.Spec[0], l.Spec[1], l.Status[0], l.Status[1]} {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// ParseLayout reads a Layout that String wrote; the zero Layout when s
// is not one.
func ParseLayout(s string) Layout {
	var n [7]int
	for i := range n {
		part, rest, _ := strings.Cut(s, ",")
		v, err := strconv.Atoi(part)
		if err != nil || v < 0 {
			return Layout{}
		}
		n[i], s = v, rest
	}
	if s != "" {
		return Layout{}
	}
	return Layout{Head: n[0], ManagedFields: [2]int{n[1], n[2]}, Spec: [2]int{n[3], n[4]}, Status: [2]int{n[5], n[6]}}
}
