package bus

import (
	"context"
	"testing"
	"time"
)

// LastSeq exposes lastSeq to the external tests.
func LastSeq(ctx context.Context, c *Conn, stream string) (uint64, error) {
	return c.lastSeq(ctx, stream)
}

// FromLeader exposes fromLeader to the external tests.
var FromLeader = fromLeader

// StreamMaxAge is a stream's configured age limit, for the external tests.
func StreamMaxAge(t testing.TB, c *Conn, stream string) time.Duration {
	t.Helper()
	st, err := c.js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo().Config.MaxAge
}
