package bus

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestHeartbeatLimits: each node has its own allowance of heartbeat
// requests, a burst and then the rate, and a node forgotten by a sweep
// starts whole, as it would have been.
func TestHeartbeatLimits(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	perToken := time.Second / heartbeatRate
	for _, tc := range []struct {
		name string
		// asks are (node, time after t0) in order; want is how many of
		// each node's were allowed.
		asks func() [][2]any
		want map[string]int
	}{
		{"a burst, then nothing until a token returns", func() [][2]any {
			var a [][2]any
			for range heartbeatBurst + 5 {
				a = append(a, [2]any{"n1", time.Duration(0)})
			}
			return append(a, [2]any{"n1", perToken / 2}, [2]any{"n1", perToken})
		}, map[string]int{"n1": heartbeatBurst + 1}},
		{"one node's flood takes nothing from another", func() [][2]any {
			var a [][2]any
			for range 3 * heartbeatBurst {
				a = append(a, [2]any{"n1", time.Duration(0)})
			}
			return append(a, [2]any{"n2", time.Duration(0)}, [2]any{"n2", time.Duration(0)})
		}, map[string]int{"n1": heartbeatBurst, "n2": 2}},
		{"an agent at the rate is never refused", func() [][2]any {
			var a [][2]any
			for i := range 10 * heartbeatBurst {
				a = append(a, [2]any{"n1", time.Duration(i) * perToken})
			}
			return a
		}, map[string]int{"n1": 10 * heartbeatBurst}},
		{"an agent at its shortest period, each renewal refused for a conflict and acquired again", func() [][2]any {
			var a [][2]any
			for i := range 10 * heartbeatBurst {
				at := time.Duration(i) * MinHeartbeatEvery
				a = append(a, [2]any{"n1", at}, [2]any{"n1", at + time.Millisecond})
			}
			return a
		}, map[string]int{"n1": 20 * heartbeatBurst}},
		{"at twice the rate, half is refused after the burst", func() [][2]any {
			var a [][2]any
			for i := range 4 * heartbeatBurst {
				a = append(a, [2]any{"n1", time.Duration(i) * perToken / 2})
			}
			return a
		}, map[string]int{"n1": heartbeatBurst + 2*heartbeatBurst - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l heartbeatLimits
			got := map[string]int{}
			for _, a := range tc.asks() {
				if l.allow(a[0].(string), t0.Add(a[1].(time.Duration))) {
					got[a[0].(string)]++
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("allowed %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHeartbeatLimitsSweep: once the map holds twice what the last sweep
// left, a new node sweeps it, and only the nodes whose allowance is whole
// go; a node that spent its burst is still held to it.
func TestHeartbeatLimitsSweep(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var l heartbeatLimits
	for range heartbeatBurst {
		l.allow("busy", t0)
	}
	for i := range 2*sweepFloor - 1 {
		l.allow(fmt.Sprintf("idle-%d", i), t0)
	}
	// The idle nodes each spent one token; a tenth of a second on, theirs
	// is back and the busy node has one of its twenty.
	later := t0.Add(time.Second / heartbeatRate)
	l.allow("new", later)
	if len(l.nodes) != 2 || l.swept != 1 {
		t.Fatalf("after the sweep %d nodes are held (swept %d), want the busy one and the new one", len(l.nodes), l.swept)
	}
	if !l.allow("busy", later) || l.allow("busy", later) {
		t.Error("the busy node's allowance did not survive the sweep")
	}
}

// TestRelayCodesRoundTrip: each sentinel a relay refuses with reaches the
// agent as itself, by name; a throttled request is TooManyRequests and,
// to the agent, unavailable too (asked again later, as its first
// heartbeat is while the bus is unavailable).
func TestRelayCodesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
		is   []error
	}{
		{fmt.Errorf("%w: node n1's heartbeats", ErrThrottled), "TooManyRequests", []error{ErrThrottled, ErrUnavailable}},
		{fmt.Errorf("%w: down", ErrUnavailable), "Unavailable", []error{ErrUnavailable}},
		{fmt.Errorf("%w: not yours", ErrForbidden), "Forbidden", []error{ErrForbidden}},
		{fmt.Errorf("%w: lease.ttl", ErrInvalid), "Invalid", []error{ErrInvalid}},
		{ErrConflict, "Conflict", []error{ErrConflict}},
	} {
		rep := failed(tc.err)
		if rep.Code != tc.code {
			t.Errorf("%v: code %q, want %q", tc.err, rep.Code, tc.code)
		}
		got := rep.err("heartbeat")
		for _, want := range tc.is {
			if !errors.Is(got, want) {
				t.Errorf("%v: the agent's error %v is not %v", tc.err, got, want)
			}
		}
	}
	if errors.Is(failed(fmt.Errorf("%w: down", ErrUnavailable)).err("x"), ErrThrottled) {
		t.Error("an unavailable bus reads as throttled")
	}
}
