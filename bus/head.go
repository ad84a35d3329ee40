package bus

import (
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/homeostat/homeostat/object"
)

// A write that leaves an object's head as the revision it wrote over had
// it says so (headerHead), and a watch whose reader holds that revision
// builds the change over it (WatchOptions.Prior, object.DecodeOver)
// instead of decoding the metadata again.

// headOf is headerHead's value: the revision a write's head is that of,
// and the write's generation.
func headOf(rev uint64, generation int64) string {
	return strconv.FormatUint(rev, 10) + "," + strconv.FormatInt(generation, 10)
}

// decodeOver is decode of a value whose header may say its head is that
// of an earlier revision (headerHead): when prior holds that revision,
// the head is taken from it (object.DecodeOver), else the value is
// decoded.
func (s *Store) decodeOver(key string, data []byte, rev uint64, l object.Layout, h nats.Header, prior Prior) (*object.Object, error) {
	if prior != nil && l != (object.Layout{}) {
		if base, gen, ok := headIn(h); ok && base < rev {
			if p := prior(key, base); p != nil {
				if o, ok := object.DecodeOver(data, l, p, gen); ok {
					o.Metadata.ResourceVersion = strconv.FormatUint(rev, 10)
					return o, nil
				}
			}
		}
	}
	return s.decode(key, data, rev, l)
}

// headIn reads headerHead: the revision a write's head is that of, and
// its generation; false when there is none to read.
func headIn(h nats.Header) (rev uint64, generation int64, ok bool) {
	v := h.Get(headerHead)
	if v == "" {
		return 0, 0, false
	}
	r, g, found := strings.Cut(v, ",")
	rev, err1 := strconv.ParseUint(r, 10, 64)
	generation, err2 := strconv.ParseInt(g, 10, 64)
	return rev, generation, found && err1 == nil && err2 == nil && rev > 0
}
