package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/testenv/poll"
)

func TestFromLeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		info jetstream.StreamInfo
		want bool
	}{
		{"a single server", jetstream.StreamInfo{}, true},
		{"the leader", jetstream.StreamInfo{Cluster: &jetstream.ClusterInfo{Leader: "n0"}}, true},
		{"a replica of a leaderless stream", jetstream.StreamInfo{Cluster: &jetstream.ClusterInfo{Leader: ""}}, false},
	} {
		if got := bus.FromLeader(&tc.info); got != tc.want {
			t.Errorf("%s: fromLeader %v, want %v", tc.name, got, tc.want)
		}
	}
}

// While a stream has no leader, a replica answers STREAM.INFO from its own
// state, which may lack acknowledged writes; a list must not take its
// revision from it. Found by the fault harness: a list answered at a
// revision older than updates acknowledged before it began.
func TestLastSeqRefusesAReplicaWithoutLeader(t *testing.T) {
	cl := bustest.NewCluster(t)
	conn := cl.Conn(t)
	s := openStore(t, conn, "widgets.example.com")
	if _, err := s.Create(context.Background(), widget("default", "w", `{}`, nil)); err != nil {
		t.Fatal(err)
	}
	cl.Stop(1)
	cl.Stop(2)
	stream := streamOf("widgets.example.com")
	js := rawJetStreamAt(t, cl.URLs())
	// The state to reach: the remaining replica answers for the stream,
	// naming no leader.
	poll.Until(t, "a replica to answer for the leaderless stream", 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := js.Stream(ctx, stream)
		return err == nil && st.CachedInfo().Cluster != nil && st.CachedInfo().Cluster.Leader == ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seq, err := bus.LastSeq(ctx, conn, stream)
	if !errors.Is(err, bus.ErrUnavailable) {
		t.Fatalf("lastSeq of a leaderless stream: %d, %v; want ErrUnavailable", seq, err)
	}
	if !strings.Contains(err.Error(), "without a leader") {
		t.Fatalf("lastSeq of a leaderless stream: %v; want it to say a replica answered", err)
	}
}
