package object

// An object's head is what its encoding holds before its parts: its
// apiVersion, kind and metadata but for the managed fields. Most writes
// leave it as it was but for the generation (a status written, a pod
// bound), and decoding it is most of decoding a change whose parts a
// layout places. A writer that knows the head is that of the revision it
// wrote over says so, and a reader that holds that revision decoded takes
// the head from it (DecodeOver) instead of decoding it again.

// SameHead reports whether a and b encode the same head, apart from
// their generation and resourceVersion (which a store sets): member for
// member as StatusOnly compares them, where equal values encode alike.
// Objects with other top-level members are never said to: their
// encoding has no layout.
func SameHead(a, b *Object) bool {
	if a == nil || b == nil || a.APIVersion != b.APIVersion || a.Kind != b.Kind || len(a.Fields) > 0 || len(b.Fields) > 0 {
		return false
	}
	for _, p := range metaParts {
		if p.name != "generation" && !p.same(a, b) {
			return false
		}
	}
	return true
}

// DecodeOver is DecodeLayout of data, an encoding with layout l whose
// head is prior's but for its generation: prior is an earlier revision
// of the object as decoded, whose metadata the new object shares (as
// decoded objects are shared: read-only). The managed fields, spec and
// status are taken from data as DecodeLayout takes them. False when l
// does not fit data, or prior holds members no layout covers.
func DecodeOver(data []byte, l Layout, prior *Object, generation int64) (*Object, bool) {
	if prior == nil || len(prior.Fields) > 0 || !l.fits(data) {
		return nil, false
	}
	o := &Object{APIVersion: prior.APIVersion, Kind: prior.Kind, Metadata: prior.Metadata}
	o.Metadata.Generation, o.Metadata.ManagedFields, o.Metadata.ResourceVersion = generation, nil, ""
	o.takeParts(data, l)
	return o, true
}
