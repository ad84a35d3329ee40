package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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

// RawConnForTest is a plain NATS connection authenticated with seed, whose
// asynchronous errors go to onErr, for tests of the server's permissions.
func RawConnForTest(t testing.TB, url string, seed []byte, onErr func(error)) *nats.Conn {
	t.Helper()
	o, err := nkeyOption(seed)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, o, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { onErr(err) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
