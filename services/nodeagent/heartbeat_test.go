package nodeagent_test

import (
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/services/nodeagent"
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
