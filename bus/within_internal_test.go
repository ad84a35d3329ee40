package bus

import (
	"context"
	"testing"
	"time"
)

// TestWithin: a bound is added only where it is sooner than the deadline
// the context has already.
func TestWithin(t *testing.T) {
	const d = time.Second
	for _, tc := range []struct {
		name   string
		parent time.Duration // the parent's time left; 0 for no deadline
		same   bool          // within returns the parent itself
	}{
		{"no deadline", 0, false},
		{"a later deadline", time.Minute, false},
		{"a sooner deadline", 100 * time.Millisecond, true},
		{"a deadline passed", -time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := context.Background()
			if tc.parent != 0 {
				var cancel context.CancelFunc
				parent, cancel = context.WithTimeout(parent, tc.parent)
				defer cancel()
			}
			before := time.Now()
			ctx, cancel := within(parent, d)
			defer cancel()
			if got := ctx == parent; got != tc.same {
				t.Fatalf("the parent itself returned: %v, want %v", got, tc.same)
			}
			dl, ok := ctx.Deadline()
			if !ok {
				t.Fatal("no deadline")
			}
			if !tc.same && (dl.Before(before.Add(d)) || dl.After(time.Now().Add(d))) {
				t.Fatalf("deadline %s from now, want %s", time.Until(dl), d)
			}
		})
	}
}
