package nodeagent_test

import (
	"context"
	"errors"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/services/nodeagent"
	"github.com/homeostat/homeostat/testenv/poll"
)

// A heartbeat's time to live and rate are what the node relay takes: an
// agent configured beyond them is refused at once, naming the field,
// rather than at its first heartbeat.
func TestGraceIsBounded(t *testing.T) {
	conn := bustest.Conn(t)
	for _, tc := range []struct {
		grace, every time.Duration
		ok           bool
	}{
		{0, 0, true}, {time.Second, 0, true}, {bus.MaxHeartbeatTTL, 0, true},
		{500 * time.Millisecond, 0, false}, {bus.MaxHeartbeatTTL + time.Second, 0, false},
		// Renewals within the node relay's rate.
		{0, bus.MinHeartbeatEvery, true}, {0, bus.MinHeartbeatEvery - time.Millisecond, false},
	} {
		_, err := nodeagent.New(nodeagent.Config{Bus: conn, NodeName: "n1", Runtime: nodeagent.NewSimulated(0),
			Grace: tc.grace, HeartbeatEvery: tc.every})
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, bus.ErrInvalid)) {
			t.Errorf("grace %s, heartbeat every %s: %v, want ok %v", tc.grace, tc.every, err, tc.ok)
		}
	}
}

// Between renewals a node's heartbeat holds a timer, not a goroutine: it
// renews all the same, and its agent stops.
func TestHeartbeatHoldsNoGoroutineBetweenRenewals(t *testing.T) {
	ctx := context.Background()
	conn := bustest.Conn(t)
	leases, err := conn.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, conn, "n1", "a")
	seen := map[uint64]bool{}
	poll.Until(t, "three renewals of the node's heartbeat", 15*time.Second, func() bool {
		if l, err := leases.Get(ctx, "node.n1"); err == nil && l.Holder == "a" {
			seen[l.Revision] = true
		}
		return len(seen) >= 3
	})
	poll.Until(t, "no goroutine of the heartbeat between renewals", 10*time.Second, func() bool {
		var b strings.Builder
		if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
			t.Fatal(err)
		}
		return !strings.Contains(b.String(), "nodeagent.(*Agent).heartbeat")
	})
	// The stop fails the test unless the agent's Run returns, which
	// waits for a renewal under way.
	a.stop()
}
