package nodeagent_test

import (
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/services/nodeagent"
)

// A heartbeat's time to live is what the node relay takes: an agent
// configured beyond it is refused at once, naming the grace, rather than
// at its first heartbeat.
func TestGraceIsBounded(t *testing.T) {
	conn := bustest.Conn(t)
	for _, tc := range []struct {
		grace time.Duration
		ok    bool
	}{
		{0, true}, {time.Second, true}, {bus.MaxHeartbeatTTL, true},
		{500 * time.Millisecond, false}, {bus.MaxHeartbeatTTL + time.Second, false},
	} {
		_, err := nodeagent.New(nodeagent.Config{Bus: conn, NodeName: "n1", Runtime: nodeagent.NewSimulated(0), Grace: tc.grace})
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, bus.ErrInvalid)) {
			t.Errorf("grace %s: %v, want ok %v", tc.grace, err, tc.ok)
		}
	}
}
