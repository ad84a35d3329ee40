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

// A claim's release runs apart from the worker (settling), so the key's
// next pass in the process may take the claim before the release lands:
// the new claim stands either way, since the release is a
// compare-and-swap on the old claim's revision.
func TestLateReleaseLeavesTheNextClaim(t *testing.T) {
	ctx := context.Background()
	leases, err := bustest.Conn(t).Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &claimer{leases: leases, holder: "a"}
	key := ClaimKey("ctl", "default.k")
	for round := range 30 {
		old, err := c.take(ctx, "ctl", "default.k")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		_, release := c.hold(ctx, old)
		released := make(chan struct{})
		go func() { defer close(released); release(ctx) }()
		next, err := c.take(ctx, "ctl", "default.k")
		if err != nil {
			t.Fatalf("round %d: taking the claim again while its release is under way: %v", round, err)
		}
		<-released
		got, err := leases.Get(ctx, key)
		if err != nil || got.Revision != next.Revision || got.Holder != "a" {
			t.Fatalf("round %d: the claim after the late release: %+v %v, want a's at %d", round, got, err, next.Revision)
		}
		_, release = c.hold(ctx, next)
		release(ctx)
	}
}
