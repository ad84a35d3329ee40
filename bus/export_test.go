package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// RelayRefusals is the node relay's count of refusals for reason.
func RelayRefusals(reason string) float64 {
	return testutil.ToFloat64(relayRefusals.WithLabelValues(reason))
}

// PublishRawForTest publishes a message with a reply subject of the
// caller's choosing on c's connection.
func PublishRawForTest(t testing.TB, c *Conn, subject, reply string, data []byte) {
	t.Helper()
	if err := c.nc.PublishRequest(subject, reply, data); err != nil {
		t.Fatal(err)
	}
}

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

// RawConnForTest is a plain NATS connection authenticated with creds, whose
// asynchronous errors go to onErr, for tests of the server's permissions.
func RawConnForTest(t testing.TB, url string, creds []byte, onErr func(error), extra ...nats.Option) *nats.Conn {
	t.Helper()
	o, err := credsOption(creds)
	if err != nil {
		t.Fatal(err)
	}
	opts := append([]nats.Option{o, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { onErr(err) })}, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// SetFanoutSize makes a store's fanout keep n changes for the test.
func SetFanoutSize(t testing.TB, n int) {
	before := fanoutSize
	fanoutSize = n
	t.Cleanup(func() { fanoutSize = before })
}

// SharedWatchers is how many watches of stream its shared read serves,
// and how many left it for reason.
func SharedWatchers(stream, reason string) (serving, alone float64) {
	return testutil.ToFloat64(sharedWatchers.WithLabelValues(stream)),
		testutil.ToFloat64(sharedWatchersAlone.WithLabelValues(stream, reason))
}

// WritesCounted is this process's count of writes to the stream labelled
// label (as Conn.Writes names it).
func WritesCounted(label string) float64 {
	return testutil.ToFloat64(storeWrites.WithLabelValues(label))
}

// StoredForTest is a key's latest stored bytes and the layout header
// they carry.
func StoredForTest(ctx context.Context, s *Store, key string) ([]byte, string, error) {
	m, err := s.lastLive(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return m.data, m.header.Get(headerLayout), nil
}

// PublishWithLayoutForTest writes data to key over revision expect, with
// layout as its layout header.
func PublishWithLayoutForTest(ctx context.Context, s *Store, key string, data []byte, expect uint64, layout string) (uint64, error) {
	return s.publish(ctx, key, data, expect, nats.Header{headerLayout: []string{layout}})
}

// ErrNotGuarded is errNotGuarded, for tests.
var ErrNotGuarded = errNotGuarded

// ConnTraffic is what the embedded server c started has had from and sent
// to each client connection, by the connection's name.
func ConnTraffic(t testing.TB, c *Conn) map[string]Traffic {
	t.Helper()
	if c.server == nil {
		t.Fatal("ConnTraffic needs the connection that started the embedded server")
	}
	cz, err := c.server.Connz(&server.ConnzOptions{Limit: 1024})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Traffic{}
	for _, ci := range cz.Conns {
		out[ci.Name] = Traffic{In: ci.InMsgs, Out: ci.OutMsgs}
	}
	return out
}

// Traffic counts a client connection's messages: In from it, Out to it.
type Traffic struct{ In, Out int64 }
