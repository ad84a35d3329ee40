package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/services/scheduler"
	"github.com/homeostat/homeostat/testenv/poll"
)

// replica runs a scheduler replica on conn until the test ends.
func replica(t *testing.T, conn *bus.Conn, identity string, ttl time.Duration) *scheduler.Service {
	t.Helper()
	svc, err := scheduler.New(scheduler.Config{Bus: conn, Identity: identity, LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("scheduler %s: %v", identity, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("scheduler %s did not stop within 30s of its context ending", identity)
		}
	})
	return svc
}

// A leader that crashes and comes back under its own identity takes its
// lease back at once, not after the lease's TTL.
func TestRestartedLeaderTakesItsLeaseBackAtOnce(t *testing.T) {
	srv := bustest.Conn(t)
	conn := bustest.Client(t, srv)
	s1 := replica(t, conn, "s1", 30*time.Second)
	poll.Until(t, "s1 to lead", 10*time.Second, s1.Leader)
	conn.Abandon() // the process dies: its lease stays live for 30s
	start := time.Now()
	again := replica(t, bustest.Client(t, srv), "s1", 30*time.Second)
	poll.Until(t, "the restarted s1 to lead well within the 30s TTL", 10*time.Second, again.Leader)
	t.Logf("the restarted s1 led again after %s (lease TTL 30s)", time.Since(start).Round(time.Millisecond))
}

// A stand-by takes over once the leader dies and its lease runs out.
func TestStandByTakesOverFromDeadLeader(t *testing.T) {
	const ttl = 3 * time.Second
	srv := bustest.Conn(t)
	ctx := context.Background()
	leases, err := srv.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	connA := bustest.Client(t, srv)
	a := replica(t, connA, "a", ttl)
	poll.Until(t, "a to lead", 10*time.Second, a.Leader)
	b := replica(t, bustest.Client(t, srv), "b", ttl)
	poll.Until(t, "b's caches to sync", 10*time.Second, func() bool {
		ready := b.Ready()
		if ready == nil {
			return false
		}
		select {
		case <-ready:
			return true
		default:
			return false
		}
	})
	if b.Leader() {
		t.Logf("b leads while a runs: a's renewals were late")
	}

	connA.Abandon()
	died := time.Now()
	// The last renewal a made is what the server holds now; a can make no other.
	last, err := leases.Get(ctx, scheduler.LeaseKey)
	if err != nil {
		t.Logf("the lease is already gone right after a died: %v", err)
	}
	poll.Until(t, "b to take over", 30*time.Second, b.Leader)
	took := time.Now()
	t.Logf("b took over %s after a died (TTL %s); %s after a's death + TTL", took.Sub(died).Round(time.Millisecond), ttl,
		took.Sub(died.Add(ttl)).Round(time.Millisecond))
	if last != nil {
		t.Logf("a's last renewal (held by %s) was %s before its death; b took over %s after that renewal + TTL",
			last.Holder, died.Sub(last.Renewed).Round(time.Millisecond), took.Sub(last.Renewed.Add(ttl)).Round(time.Millisecond))
	}
}
