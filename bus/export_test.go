package bus

import "context"

// LastSeq exposes lastSeq to the external tests.
func LastSeq(ctx context.Context, c *Conn, stream string) (uint64, error) {
	return c.lastSeq(ctx, stream)
}

// FromLeader exposes fromLeader to the external tests.
var FromLeader = fromLeader
