package api

import "net/http"

// writeStack is the stack a write's admission is given at once (see
// growStack).
const writeStack = 32 << 10

// growStack grows the calling goroutine's stack in one step to hold what
// admitting a write needs. Each request runs on a new goroutine, whose
// small stack the decoding and schema validation of an object grew by
// doubling, each time copying every frame above: a tenth of the API's
// work under a stream of creates. Grown while its frames are few, the
// stack is copied once, and cheaply. (CockroachDB's growstack does the
// same for its storage paths.)
//
//go:noinline
func growStack() {
	var buf [writeStack]byte
	touch(buf[:])
}

// touch keeps buf, and so the frame that holds it, from being optimized
// away; it does not let buf escape to the heap.
//
//go:noinline
func touch(buf []byte) { buf[len(buf)-1] = 1 }

// grownForWrites grows the stack of a request that is not a read
// (growStack) before the handlers run: grown in the dispatch, the stack
// had been grown already by the tracing middleware's reading of the
// headers, and was copied with every frame above it. A write refused
// before its dispatch (unauthenticated, forbidden, shed) pays for the
// growth too, a copy of the few frames below.
func grownForWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			growStack()
		}
		next.ServeHTTP(w, r)
	})
}
