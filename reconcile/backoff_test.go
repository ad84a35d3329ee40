package reconcile_test

import (
	"testing"
	"time"

	"github.com/homeostat/homeostat/reconcile"
)

// The delay after each failure: doubling from Initial, capped at Max.
func TestBackoffShape(t *testing.T) {
	b := reconcile.DefaultBackoff
	want := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	for i, w := range want {
		if got := b.Delay(uint64(i + 1)); got != w {
			t.Errorf("attempt %d: %s, want %s", i+1, got, w)
		}
	}
	if got := b.Delay(100); got != 5*time.Minute {
		t.Errorf("attempt 100: %s, want the 5m cap", got)
	}
	for a := uint64(1); a < 40; a++ {
		if b.Delay(a+1) < b.Delay(a) {
			t.Fatalf("delay shrank from attempt %d to %d", a, a+1)
		}
	}
	j := reconcile.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: 0.1}
	for range 100 {
		if d := j.Delay(3); d < 3600*time.Millisecond || d > 4400*time.Millisecond {
			t.Fatalf("jittered third delay %s outside 4s ±10%%", d)
		}
	}
}
