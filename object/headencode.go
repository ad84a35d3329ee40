package object

import (
	"slices"
	"strconv"
	"time"

	json "github.com/go-json-experiment/json/v1"
)

// appendEncodedHead appends an object's head, {"apiVersion":…,"kind":…,
// "metadata":{…}} without the metadata's managed fields, byte for byte as
// the v1 encoder writes it (json.Marshal of the envelope), which every
// write of an object does once or twice: by reflection it took about 2 µs
// of a pod's write. Strings are written by hand only when they need no
// escaping (printable ASCII but for the quote, the backslash and what v1
// escapes for HTML), times only when v1 writes them (a four-digit year,
// a zone within a day of UTC); an object with anything else goes
// through the encoder.
func appendEncodedHead(b []byte, o *Object) ([]byte, error) {
	if out, ok := appendHead(b, o); ok {
		return out, nil
	}
	head := *o
	head.Metadata.ManagedFields, head.Spec, head.Status, head.Fields = nil, nil, nil, nil
	h, err := json.Marshal((*envelope)(&head))
	if err != nil {
		return nil, err
	}
	return append(b, h...), nil
}

// headSize is about what o's head takes, so that it is written into one
// buffer.
func headSize(o *Object) int {
	n := 192 + len(o.APIVersion) + len(o.Kind)
	m := &o.Metadata
	n += len(m.Name) + len(m.GenerateName) + len(m.Namespace) + len(m.UID) + len(m.ResourceVersion)
	n += 48 * (len(m.Labels) + len(m.Annotations)) // not read: a guess does
	for _, r := range m.OwnerReferences {
		n += 128 + len(r.APIVersion) + len(r.Kind) + len(r.Name) + len(r.UID)
	}
	for _, f := range m.Finalizers {
		n += len(f) + 3
	}
	return n
}

// appendHead appends o's head to b, or reports that it holds what only
// the encoder writes as v1 does.
func appendHead(b []byte, o *Object) ([]byte, bool) {
	m := &o.Metadata
	w := headWriter{b: b, first: true, ok: true}
	w.b = append(w.b, '{')
	w.str("apiVersion", o.APIVersion, true)
	w.str("kind", o.Kind, true)
	w.b = append(w.b, `,"metadata":{`...)
	w.first = true
	w.str("name", m.Name, true)
	w.str("generateName", m.GenerateName, false)
	w.str("namespace", m.Namespace, false)
	w.str("uid", m.UID, false)
	if m.Generation != 0 {
		w.name("generation")
		w.b = strconv.AppendInt(w.b, m.Generation, 10)
	}
	w.str("resourceVersion", m.ResourceVersion, false)
	if !m.CreationTimestamp.IsZero() {
		w.time("creationTimestamp", m.CreationTimestamp)
	}
	if m.DeletionTimestamp != nil {
		w.time("deletionTimestamp", *m.DeletionTimestamp)
	}
	if m.DeletionGracePeriodSeconds != nil {
		w.name("deletionGracePeriodSeconds")
		w.b = strconv.AppendInt(w.b, *m.DeletionGracePeriodSeconds, 10)
	}
	w.strMap("labels", m.Labels)
	w.strMap("annotations", m.Annotations)
	if len(m.OwnerReferences) > 0 {
		w.name("ownerReferences")
		w.b = append(w.b, '[')
		for i := range m.OwnerReferences {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, '{')
			w.ownerRef(&m.OwnerReferences[i])
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, ']')
	}
	if len(m.Finalizers) > 0 {
		w.name("finalizers")
		w.b = append(w.b, '[')
		for i, f := range m.Finalizers {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.quote(f)
		}
		w.b = append(w.b, ']')
	}
	w.b = append(w.b, "}}"...)
	return w.b, w.ok
}

// headWriter appends an object's members; first says whether the next
// member opens its object (no comma before it).
type headWriter struct {
	b     []byte
	first bool
	ok    bool
}

// name appends a member's name.
func (w *headWriter) name(n string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(w.b, '"')
	w.b = append(w.b, n...)
	w.b = append(w.b, `":`...)
}

// str appends a string member; an empty one only when always is set (no
// omitempty).
func (w *headWriter) str(n, v string, always bool) {
	if v == "" && !always {
		return
	}
	w.name(n)
	w.quote(v)
}

func (w *headWriter) quote(s string) {
	for i := 0; i < len(s); i++ {
		if escaped[s[i]] {
			w.ok = false
			return
		}
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

// escaped are the bytes a string is left to the library for: those v1
// writes otherwise (control characters, the quote and the backslash,
// what it escapes for HTML) and every byte beyond printable ASCII (DEL,
// which v1 writes as it is, and any of a character beyond ASCII, where
// U+2028 and U+2029 are escaped and invalid UTF-8 replaced).
var escaped = func() (e [256]bool) {
	for c := range 256 {
		e[c] = c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
	}
	return e
}()

// time appends a time as the v1 encoder writes it, which refuses a year
// beyond four digits and a zone a day or more from UTC.
func (w *headWriter) time(n string, t time.Time) {
	_, offset := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || offset <= -24*3600 || offset >= 24*3600 {
		w.ok = false
		return
	}
	w.name(n)
	w.b = append(w.b, '"')
	w.b = t.AppendFormat(w.b, time.RFC3339Nano)
	w.b = append(w.b, '"')
}

// strMap appends a map member, its keys sorted; an empty map is left out.
func (w *headWriter) strMap(n string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	w.name(n)
	w.b = append(w.b, '{')
	var room [8]string // most maps of labels or annotations fit
	keys := room[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.quote(k)
		w.b = append(w.b, ':')
		w.quote(m[k])
	}
	w.b = append(w.b, '}')
}

func (w *headWriter) ownerRef(r *OwnerReference) {
	w.first = true
	w.str("apiVersion", r.APIVersion, true)
	w.str("kind", r.Kind, true)
	w.str("name", r.Name, true)
	w.str("uid", r.UID, true)
	w.boolPtr("controller", r.Controller)
	w.boolPtr("blockOwnerDeletion", r.BlockOwnerDeletion)
}

func (w *headWriter) boolPtr(n string, v *bool) {
	if v == nil {
		return
	}
	w.name(n)
	w.b = strconv.AppendBool(w.b, *v)
}
