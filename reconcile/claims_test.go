package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/testenv/poll"
)

// claimWaits reads how many deliveries of controller were handed back
// because another process held the key.
func claimWaits(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "homeostat_reconcile_claim_waits_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// claimEnv is a bus with the widgets' store and the leases claims live in.
func claimEnv(t *testing.T) (*bus.Conn, *bus.Store, *bus.Leases) {
	t.Helper()
	conn := bustest.Conn(t)
	leases, err := conn.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return conn, store(t, conn), leases
}

// A key claimed by another process is not reconciled, by any of the
// processes running the controller, until the claim is given up; then it
// is, and the claim is given up again after.
func TestExclusiveKeyWaitsForItsClaim(t *testing.T) {
	ctx := context.Background()
	conn, s, leases := claimEnv(t)
	const name = "exclusive-widgets"
	rec := &recorder{}
	for _, id := range []string{"p1", "p2"} {
		startAs(t, conn, id, reconcile.Options{Name: name, Reconciler: rec, Resync: -1, Exclusive: true})
	}
	key := reconcile.ClaimKey(name, "default.w")
	held, err := leases.Acquire(ctx, key, "elsewhere", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before := claimWaits(t, name)
	if _, err := s.Create(ctx, widget("w")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the key handed back twice while claimed elsewhere", 20*time.Second, func() bool {
		return claimWaits(t, name) >= before+2
	})
	if n := rec.count("default.w"); n != 0 {
		t.Fatalf("reconciled %d times while another process held the key", n)
	}
	if err := leases.Release(ctx, held); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "reconciled once the claim was given up", 10*time.Second, func() bool { return rec.count("default.w") > 0 })
	poll.Until(t, "the claim given up after the reconcile", 10*time.Second, func() bool {
		_, err := leases.Get(ctx, key)
		return errors.Is(err, bus.ErrNotFound)
	})
}

// A process restarted under the same identity takes its own claims back
// at once instead of waiting for them to expire.
func TestRestartedProcessTakesItsClaimBack(t *testing.T) {
	ctx := context.Background()
	conn, s, leases := claimEnv(t)
	const name = "exclusive-restart"
	// Left by this process's previous run; it would not expire for a minute.
	if _, err := leases.Acquire(ctx, reconcile.ClaimKey(name, "default.w"), "p1", time.Minute); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	startAs(t, conn, "p1", reconcile.Options{Name: name, Reconciler: rec, Resync: -1, Exclusive: true})
	if _, err := s.Create(ctx, widget("w")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "reconciled under its own claim", 20*time.Second, func() bool { return rec.count("default.w") > 0 })
}
