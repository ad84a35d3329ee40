package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/testenv/poll"
)

// nodeKeepsItsHeartbeat checks that node n1's agent takes and renews its
// heartbeat lease through the relay, as bus.Leases would directly, and
// that the relay keeps it to its own lease and to sane values.
func nodeKeepsItsHeartbeat(t *testing.T, server, agent *bus.Conn) {
	t.Helper()
	ctx := context.Background()
	leases, err := server.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := agent.NodeWriter("n1")
	if err != nil {
		t.Fatal(err)
	}
	key := bus.NodeLeaseKey("n1")
	l, err := w.Acquire(ctx, key, "agent-n1", time.Minute)
	if err != nil {
		t.Fatalf("a node taking its own heartbeat lease through the relay: %v", err)
	}
	stored := func() *bus.Lease {
		t.Helper()
		got, err := leases.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := stored(); got.Holder != "agent-n1" || got.Revision != l.Revision || got.TTL != "1m0s" || l.Key != key {
		t.Fatalf("stored lease %+v, the relay answered %+v", got, l)
	}
	renewed, err := w.Renew(ctx, l, 30*time.Second)
	if err != nil {
		t.Fatalf("a node renewing its heartbeat through the relay: %v", err)
	}
	if got := stored(); got.Revision != renewed.Revision || renewed.Revision <= l.Revision || got.TTL != "30s" {
		t.Fatalf("stored lease %+v after a renewal answered %+v", got, renewed)
	}
	if _, err := w.Renew(ctx, l, time.Minute); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("renewing a revision written over: %v, want a conflict", err)
	}
	if _, err := w.Acquire(ctx, key, "another-agent", time.Minute); !errors.Is(err, bus.ErrAlreadyExists) {
		t.Fatalf("another agent taking the live heartbeat: %v, want already exists", err)
	}
	if _, err := w.Acquire(ctx, bus.NodeLeaseKey("n2"), "agent-n1", time.Minute); !errors.Is(err, bus.ErrForbidden) {
		t.Fatalf("node n1 taking node n2's heartbeat: %v, want forbidden", err)
	}
	for _, ttl := range []time.Duration{0, 2 * time.Hour} {
		if _, err := w.Renew(ctx, renewed, ttl); !errors.Is(err, bus.ErrInvalid) {
			t.Fatalf("a heartbeat for %s: %v, want invalid", ttl, err)
		}
	}
	if got := stored(); got.Revision != renewed.Revision {
		t.Fatalf("refused heartbeats wrote the lease: %+v, want revision %d", got, renewed.Revision)
	}
}

// The relay writes the heartbeat of the node whose subject a request came
// on, whatever the request names: node n1 asking for n2's key, or for a
// free one, takes its own, and a request without what a heartbeat needs
// is refused by name.
func TestRelayKeepsANodeToItsHeartbeat(t *testing.T) {
	ctx := context.Background()
	op, server := operatorBus(t)
	leases, err := server.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := leases.Acquire(ctx, bus.NodeLeaseKey("n2"), "agent-n2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ask := heartbeatAsker(t, op, server, "n1")
	if rep := ask(`{"op":"acquire","key":"node.n2","lease":{"holder":"agent-n1","ttl":"1m0s"}}`); rep["error"] != nil {
		t.Fatalf("a heartbeat naming another node's key: %v", rep)
	}
	if got, err := leases.Get(ctx, bus.NodeLeaseKey("n2")); err != nil || got.Revision != theirs.Revision || got.Holder != "agent-n2" {
		t.Fatalf("node n2's lease after n1's request: %+v, %v; want it untouched", got, err)
	}
	if got, err := leases.Get(ctx, bus.NodeLeaseKey("n1")); err != nil || got.Holder != "agent-n1" {
		t.Fatalf("node n1's lease after its request: %+v, %v", got, err)
	}
	rep := ask(`{"op":"acquire","key":"scheduler","lease":{"holder":"agent-n1","ttl":"1m0s"}}`)
	if _, err := leases.Get(ctx, "scheduler"); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("the free key scheduler after node n1 named it (answered %v): %v, want not found", rep, err)
	}
	for body, field := range map[string]string{
		`{"op":"acquire"}`: "needs its lease",
		`{"op":"status","lease":{"holder":"a","ttl":"1m"}}`:                                 `op "status"`,
		`{"op":"acquire","lease":{"ttl":"1m"}}`:                                             "lease.holder",
		`{"op":"acquire","lease":{"holder":"` + strings.Repeat("a", 254) + `","ttl":"1m"}}`: "lease.holder",
		`{"op":"acquire","lease":{"holder":"a","ttl":"forever"}}`:                           "lease.ttl",
		`{"op":"renew","lease":{"holder":"agent-n1","ttl":"1m"}}`:                           "lease.revision",
		`{"op":"acquire","lease":{"holder":"a","ttl":"500ms"}}`:                             "lease.ttl",
	} {
		rep := ask(body)
		if rep["code"] != "Invalid" || !strings.Contains(fmt.Sprint(rep["error"]), field) {
			t.Errorf("%s: %v, want Invalid naming %s", body, rep, field)
		}
	}
}

// TestRelayThrottlesAFloodingNode: a node that sends heartbeat requests
// past its rate has the excess refused, TooManyRequests, without a write;
// another node is answered as before, and the flooder again once its
// allowance returns.
func TestRelayThrottlesAFloodingNode(t *testing.T) {
	ctx := context.Background()
	op, server := operatorBus(t)
	leases, err := server.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := heartbeatAsker(t, op, server, "n1"), heartbeatAsker(t, op, server, "n2")
	acquire := `{"op":"acquire","lease":{"holder":"agent","ttl":"1m0s"}}`
	if rep := n1(acquire); rep["error"] != nil {
		t.Fatalf("n1's first heartbeat: %v", rep)
	}
	first, err := leases.Get(ctx, bus.NodeLeaseKey("n1"))
	if err != nil {
		t.Fatal(err)
	}
	renew := fmt.Sprintf(`{"op":"renew","lease":{"holder":"agent","ttl":"1m0s","revision":%d}}`, first.Revision)
	start := time.Now()
	answered, throttled := 0, 0
	const flood = 100
	for range flood {
		switch rep := n1(renew); rep["code"] {
		case "TooManyRequests":
			throttled++
		default:
			answered++
		}
	}
	// Besides the burst, what the rate gave back while the flood lasted
	// (a machine that took seven seconds for a hundred requests would let
	// them all through, rightly).
	const burst, every = 20, 100 * time.Millisecond // the relay's allowance
	most := burst + int(time.Since(start)/every) + 1
	if answered > most {
		t.Fatalf("of %d heartbeats sent at once %d were answered and %d throttled; want at most %d answered", flood, answered, throttled, most)
	}
	// Only the first renewal of the revision can have written; the others
	// answered were conflicts, and the throttled wrote nothing.
	if got, err := leases.Get(ctx, bus.NodeLeaseKey("n1")); err != nil || got.Revision > first.Revision+1 {
		t.Fatalf("n1's lease after the flood: %+v, %v; want at most one renewal of revision %d", got, err, first.Revision)
	}
	if rep := n2(acquire); rep["error"] != nil {
		t.Fatalf("n2's heartbeat while n1 floods: %v", rep)
	}
	poll.Until(t, "n1 answered again", 10*time.Second, func() bool {
		return n1(acquire)["code"] != "TooManyRequests"
	})
}

// heartbeatAsker sends raw heartbeat requests to the relay as node's
// agent would, and returns the relay's decoded answer.
func heartbeatAsker(t *testing.T, op *bus.Operator, server *bus.Conn, node string) func(body string) map[string]any {
	t.Helper()
	creds, err := op.NodeCreds(node)
	if err != nil {
		t.Fatal(err)
	}
	raw := bus.RawConnForTest(t, server.ClientURL(), creds, func(error) {}, nats.CustomInboxPrefix("_INBOX_"+node))
	return func(body string) map[string]any {
		t.Helper()
		m, err := raw.Request("hs.relay."+node+".heartbeat", []byte(body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep map[string]any
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
}
