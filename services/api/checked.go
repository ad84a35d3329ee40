package api

import (
	"sync"

	"github.com/homeostat/homeostat/schemas"
)

// checkedFields remembers managed fields that passed a built-in kind's
// schema check, so that the next object bringing the same bytes is
// checked without them. A create's managed fields are the field
// manager's, the same for every object a client makes alike within a
// second (the field manager stamps them by the second), and for a small
// object they were most of its document: decoded, walked by the schema
// and encoded again for every create. In the built-in kinds' schemas a
// managed fields entry's validity does not depend on the rest of the
// object (the metadata's schema checks its entries alone, and nothing
// else reads them) and no default touches them, so the check of the rest
// decides as the whole did. A custom kind's schema may constrain its
// metadata or tie one member to another, so its objects are always
// checked whole (remembers).
type checkedFields struct {
	mu sync.Mutex
	m  map[checkedKey]struct{}
}

type checkedKey struct {
	res    *schemas.Resource
	fields string
}

// checkedSize and checkedMaxBytes bound what is remembered: a burst of
// creates needs one entry a second and manager, and the saving is for
// small objects, whose managed fields are a few hundred bytes.
const (
	checkedSize     = 256
	checkedMaxBytes = 4 << 10
)

// remembers says whether fields of res's objects may be remembered.
func remembers(res *schemas.Resource, fields []byte) bool {
	return !res.Custom && len(fields) > 0 && len(fields) <= checkedMaxBytes
}

// known reports whether fields passed res's check before, as they are.
func (c *checkedFields) known(res *schemas.Resource, fields []byte) bool {
	if !remembers(res, fields) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[checkedKey{res, string(fields)}]
	return ok
}

// add remembers fields as passed by res's check.
func (c *checkedFields) add(res *schemas.Resource, fields []byte) {
	if !remembers(res, fields) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= checkedSize {
		c.m = map[checkedKey]struct{}{}
	}
	c.m[checkedKey{res, string(fields)}] = struct{}{}
}
