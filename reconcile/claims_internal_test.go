package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/testenv/poll"
)

// Work under a claim ends, with ErrUnavailable as its cause, once the
// claim is found taken over, so that it stops writing.
func TestLostClaimEndsTheWork(t *testing.T) {
	ctx := context.Background()
	leases, err := bustest.Conn(t).Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &claimer{leases: leases, holder: "a"}
	ls, err := c.take(ctx, "ctl", "default.k")
	if err != nil {
		t.Fatal(err)
	}
	work, release := c.hold(ctx, ls)
	defer release(ctx)
	other := &claimer{leases: leases, holder: "b"}
	if _, err := other.take(ctx, "ctl", "default.k"); !errors.Is(err, bus.ErrAlreadyExists) {
		t.Fatalf("another holder taking the claim: got %v, want ErrAlreadyExists", err)
	}
	// The claim is written again behind the worker's back (as when it
	// expires and another process takes it): here, by its holder's next
	// incarnation taking it back.
	if _, err := c.take(ctx, "ctl", "default.k"); err != nil {
		t.Fatalf("the holder taking its own claim again: %v", err)
	}
	poll.Until(t, "the work ended", 10*time.Second, func() bool { return work.Err() != nil })
	if cause := context.Cause(work); !errors.Is(cause, bus.ErrUnavailable) {
		t.Fatalf("the work ended with %v, want ErrUnavailable", cause)
	}
}

// A claim given up is taken again from the revision it was left free at;
// when another process took and gave it up in between, or holds it, that
// revision is stale and the claim is taken, or waited for, as before.
func TestClaimTakenAgainFromWhereItWasFreed(t *testing.T) {
	ctx := context.Background()
	leases, err := bustest.Conn(t).Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := &claimer{leases: leases, holder: "a"}
	b := &claimer{leases: leases, holder: "b"}
	takeAndRelease := func(c *claimer) {
		t.Helper()
		ls, err := c.take(ctx, "ctl", "default.k")
		if err != nil {
			t.Fatalf("%s taking the claim: %v", c.holder, err)
		}
		_, release := c.hold(ctx, ls)
		release(ctx)
		if _, err := leases.Get(ctx, ClaimKey("ctl", "default.k")); !errors.Is(err, bus.ErrNotFound) {
			t.Fatalf("the claim after %s gave it up: %v, want ErrNotFound", c.holder, err)
		}
	}
	takeAndRelease(a)
	if a.free[ClaimKey("ctl", "default.k")] == 0 {
		t.Fatal("the revision the claim was left free at is not kept")
	}
	takeAndRelease(a) // from where a left it
	takeAndRelease(b) // a's revision is stale now
	takeAndRelease(a)
	held, err := b.take(ctx, "ctl", "default.k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.take(ctx, "ctl", "default.k"); !errors.Is(err, bus.ErrAlreadyExists) {
		t.Fatalf("taking a claim held elsewhere: %v, want ErrAlreadyExists", err)
	}
	_, release := b.hold(ctx, held)
	release(ctx)
	takeAndRelease(a)
}
