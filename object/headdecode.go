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
		at := p.member()
		if at < next { // out of order, or twice, or unknown
			return nil, false
		}
		next = at + 1
		ok = p.metaMember(m, at)
	}
	if !ok || !p.lit("}}") || p.i != len(b) {
		return nil, false
	}
	return o, true
}

// The members after the name, in the encoder's order.
const (
	mGenerateName = iota
	mNamespace
	mUID
	mGeneration
	mResourceVersion
	mCreationTimestamp
	mDeletionTimestamp
	mDeletionGracePeriodSeconds
	mLabels
	mAnnotations
	mOwnerReferences
	mFinalizers
)

// metaMember is the place of a member after the name, -1 for another.
func metaMember(name []byte) int {
	switch string(name) {
	case "generateName":
		return mGenerateName
	case "namespace":
		return mNamespace
	case "uid":
		return mUID
	case "generation":
		return mGeneration
	case "resourceVersion":
		return mResourceVersion
	case "creationTimestamp":
		return mCreationTimestamp
	case "deletionTimestamp":
		return mDeletionTimestamp
	case "deletionGracePeriodSeconds":
		return mDeletionGracePeriodSeconds
	case "labels":
		return mLabels
	case "annotations":
		return mAnnotations
	case "ownerReferences":
		return mOwnerReferences
	case "finalizers":
		return mFinalizers
	}
	return -1
}

type headParser struct {
	b []byte
	i int
}

// metaMember reads the value of the member at its place.
func (p *headParser) metaMember(m *Meta, at int) bool {
	switch at {
	case mGenerateName:
		return p.str(&m.GenerateName)
	case mNamespace:
		return p.common(&m.Namespace)
	case mUID:
		return p.str(&m.UID)
	case mGeneration:
		return p.integer(&m.Generation)
	case mResourceVersion:
		return p.str(&m.ResourceVersion)
	case mCreationTimestamp:
		return p.timestamp(&m.CreationTimestamp)
	case mDeletionTimestamp:
		m.DeletionTimestamp = new(time.Time)
		return p.timestamp(m.DeletionTimestamp)
	case mDeletionGracePeriodSeconds:
		m.DeletionGracePeriodSeconds = new(int64)
		return p.integer(m.DeletionGracePeriodSeconds)
	case mLabels:
		return p.strMap(&m.Labels)
	case mAnnotations:
		return p.strMap(&m.Annotations)
	case mOwnerReferences:
		m.OwnerReferences = []OwnerReference{}
		return p.list(func() bool {
			m.OwnerReferences = append(m.OwnerReferences, OwnerReference{})
			return p.ownerRef(&m.OwnerReferences[len(m.OwnerReferences)-1])
		})
	case mFinalizers:
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

// member reads ,"name": and returns the member's place (metaMember),
// -1 for another or for what is no member.
func (p *headParser) member() int {
	if !p.lit(",") {
		return -1
	}
	start, end, ok := p.quoted()
	if !ok || !p.lit(":") {
		return -1
	}
	return metaMember(p.b[start:end])
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
// namespace) as the copy unique keeps of it, which the objects decoded
// between two collections share, as the decoder's own cache of strings
// shares them (unique.Make copies a string it keeps, so the one made over
// the buffer's bytes is never kept).
func (p *headParser) common(s *string) bool {
	start, end, ok := p.quoted()
	if ok && end > start {
		*s = unique.Make(unsafe.String(&p.b[start], end-start)).Value()
	}
	return ok
}

// integer reads an integer as JSON writes one: no leading zero, no fraction
// or exponent, within int64.
func (p *headParser) integer(n *int64) bool {
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

// timestamp reads a time as time.Time's UnmarshalJSON reads it.
func (p *headParser) timestamp(t *time.Time) bool {
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
	if p.lit(`,"controller":`) && !p.boolean(&r.Controller) {
		return false
	}
	if p.lit(`,"blockOwnerDeletion":`) && !p.boolean(&r.BlockOwnerDeletion) {
		return false
	}
	return p.lit("}")
}

func (p *headParser) boolean(v **bool) bool {
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
