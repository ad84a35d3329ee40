package object

import (
	"strconv"
	"time"
	"unique"
	"unsafe"
)

// parseHead reads an object's head as appendHead writes it, with the
// closing braces of its metadata and of the object after it: members in
// the encoder's order, strings without escapes, no spaces, no nulls. It
// reads that form in a single pass over the bytes, where the reflective
// decoder took about 3.6 µs of every pod change a reader decoded; any
// other form, valid or not, is refused (false), for the decoder to read as
// it always has. What it reads is what the decoder reads of the same
// bytes.
func parseHead(b []byte) (*decoding, bool) {
	p := headParser{b: b}
	o := &decoding{}
	m := &o.Metadata
	ok := p.lit(`{"apiVersion":`) && p.common(&o.APIVersion) && p.lit(`,"kind":`) && p.common(&o.Kind) &&
		p.lit(`,"metadata":{"name":`) && p.str(&m.Name)
	for next := 0; ok && p.more(); {
		var name string
		if name, ok = p.member(); !ok {
			break
		}
		at := metaOrder(name)
		if at < next { // out of order, or twice, or unknown
			return nil, false
		}
		next = at + 1
		ok = p.metaMember(m, name)
	}
	if !ok || !p.lit("}}") || p.i != len(b) {
		return nil, false
	}
	return o, true
}

// metaMembers are the members after the name, in the encoder's order.
var metaMembers = []string{"generateName", "namespace", "uid", "generation", "resourceVersion", "creationTimestamp",
	"deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers"}

func metaOrder(name string) int {
	for i, n := range metaMembers {
		if n == name {
			return i
		}
	}
	return -1
}

type headParser struct {
	b []byte
	i int
}

func (p *headParser) metaMember(m *Meta, name string) bool {
	switch name {
	case "generateName":
		return p.str(&m.GenerateName)
	case "namespace":
		return p.common(&m.Namespace)
	case "uid":
		return p.str(&m.UID)
	case "generation":
		return p.int(&m.Generation)
	case "resourceVersion":
		return p.str(&m.ResourceVersion)
	case "creationTimestamp":
		return p.time(&m.CreationTimestamp)
	case "deletionTimestamp":
		m.DeletionTimestamp = new(time.Time)
		return p.time(m.DeletionTimestamp)
	case "deletionGracePeriodSeconds":
		m.DeletionGracePeriodSeconds = new(int64)
		return p.int(m.DeletionGracePeriodSeconds)
	case "labels":
		return p.strMap(&m.Labels)
	case "annotations":
		return p.strMap(&m.Annotations)
	case "ownerReferences":
		m.OwnerReferences = []OwnerReference{}
		return p.list(func() bool {
			m.OwnerReferences = append(m.OwnerReferences, OwnerReference{})
			return p.ownerRef(&m.OwnerReferences[len(m.OwnerReferences)-1])
		})
	case "finalizers":
		m.Finalizers = []string{}
		return p.list(func() bool {
			var f string
			ok := p.str(&f)
			m.Finalizers = append(m.Finalizers, f)
			return ok
		})
	}
	return false
}

// more reports whether a member follows: a comma, not the closing brace.
func (p *headParser) more() bool { return p.i < len(p.b) && p.b[p.i] == ',' }

// lit reads s as it is.
func (p *headParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// member reads ,"name": and returns the name.
func (p *headParser) member() (string, bool) {
	if !p.lit(",") {
		return "", false
	}
	start, end, ok := p.quoted()
	if !ok || !p.lit(":") {
		return "", false
	}
	return string(p.b[start:end]), true
}

// quoted reads a string with no byte to unescape or that the encoder
// escapes, and returns where its content lies.
func (p *headParser) quoted() (int, int, bool) {
	if !p.lit(`"`) {
		return 0, 0, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			p.i++
			return start, p.i - 1, true
		}
		if escaped[c] {
			return 0, 0, false
		}
		p.i++
	}
	return 0, 0, false
}

func (p *headParser) str(s *string) bool {
	start, end, ok := p.quoted()
	if ok {
		*s = string(p.b[start:end])
	}
	return ok
}

// common reads a string that many objects hold alike (a kind, a
// namespace), as the one copy kept of it (unique.Make copies a string it
// keeps, so the one made over the buffer's bytes is never kept).
func (p *headParser) common(s *string) bool {
	start, end, ok := p.quoted()
	if ok && end > start {
		*s = unique.Make(unsafe.String(&p.b[start], end-start)).Value()
	}
	return ok
}

// int reads an integer as JSON writes one: no leading zero, no fraction
// or exponent, within int64.
func (p *headParser) int(n *int64) bool {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || p.b[digits] == '0' && p.i-digits > 1 {
		return false
	}
	v, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	*n = v
	return err == nil
}

// time reads a time as time.Time's UnmarshalJSON reads it.
func (p *headParser) time(t *time.Time) bool {
	start := p.i
	if _, _, ok := p.quoted(); !ok {
		return false
	}
	return t.UnmarshalJSON(p.b[start:p.i]) == nil
}

func (p *headParser) strMap(m *map[string]string) bool {
	if !p.lit("{") {
		return false
	}
	out := map[string]string{}
	*m = out
	if p.lit("}") {
		return true
	}
	for {
		var k, v string
		if !p.str(&k) || !p.lit(":") || !p.str(&v) {
			return false
		}
		if _, twice := out[k]; twice { // the decoder keeps the last; leave it to
			return false
		}
		out[k] = v
		if p.lit("}") {
			return true
		}
		if !p.lit(",") {
			return false
		}
	}
}

// list reads a list whose elements item reads.
func (p *headParser) list(item func() bool) bool {
	if !p.lit("[") {
		return false
	}
	if p.lit("]") {
		return true
	}
	for {
		if !item() {
			return false
		}
		if p.lit("]") {
			return true
		}
		if !p.lit(",") {
			return false
		}
	}
}

func (p *headParser) ownerRef(r *OwnerReference) bool {
	if !(p.lit(`{"apiVersion":`) && p.str(&r.APIVersion) && p.lit(`,"kind":`) && p.str(&r.Kind) &&
		p.lit(`,"name":`) && p.str(&r.Name) && p.lit(`,"uid":`) && p.str(&r.UID)) {
		return false
	}
	if p.lit(`,"controller":`) && !p.bool(&r.Controller) {
		return false
	}
	if p.lit(`,"blockOwnerDeletion":`) && !p.bool(&r.BlockOwnerDeletion) {
		return false
	}
	return p.lit("}")
}

func (p *headParser) bool(v **bool) bool {
	switch {
	case p.lit("true"):
		*v = new(true)
	case p.lit("false"):
		*v = new(false)
	default:
		return false
	}
	return true
}
