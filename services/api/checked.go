package api

import (
	"sync"

	"github.com/homeostat/homeostat/schemas"
)

// checkedFields remembers managed fields that passed a kind's schema
// check, so that the next object bringing the same bytes is checked
// without them. A create's managed fields are the field manager's, the
// same for every object a client makes alike within a second (the field
// manager stamps them by the second), and for a small object they were
// most of its document: decoded, walked by the schema and encoded again
// for every create. A managed fields entry's validity does not depend on
// the rest of the object (the metadata's schema checks its entries alone)
// and the schemas give them no defaults, so the check of the rest decides
// as the whole did. Kept by resource, as a custom kind's schema is
// replaced with a resource of its own.
type checkedFields struct {
	mu sync.Mutex
	m  map[checkedKey]struct{}
}

type checkedKey struct {
	res    *schemas.Resource
	fields string
}

// checkedSize bounds what is remembered: a burst of creates needs one
// entry a second and manager.
const checkedSize = 256

// known reports whether fields passed res's check before, as they are.
func (c *checkedFields) known(res *schemas.Resource, fields []byte) bool {
	if len(fields) == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[checkedKey{res, string(fields)}]
	return ok
}

// add remembers fields as passed by res's check.
func (c *checkedFields) add(res *schemas.Resource, fields []byte) {
	if len(fields) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= checkedSize {
		c.m = map[checkedKey]struct{}{}
	}
	c.m[checkedKey{res, string(fields)}] = struct{}{}
}
