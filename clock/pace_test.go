package clock

import (
	"context"
	"testing"
	"time"
)

func TestPaceNext(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name       string
		first, max time.Duration
		want       []time.Duration
	}{
		{"doubles to the cap", 50 * ms, 500 * ms, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 500 * ms, 500 * ms}},
		{"first above the cap", time.Second, 500 * ms, []time.Duration{500 * ms, 500 * ms}},
		{"first equals the cap", 100 * ms, 100 * ms, []time.Duration{100 * ms, 100 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Pace{First: tc.first, Max: tc.max}
			for i, want := range tc.want {
				if got := p.Next(); got != want {
					t.Fatalf("interval %d = %s, want %s", i, got, want)
				}
			}
			p.Reset()
			if got := p.Next(); got != min(tc.first, tc.max) {
				t.Fatalf("after Reset = %s, want %s", got, min(tc.first, tc.max))
			}
		})
	}
}

func TestPaceWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := Pace{First: time.Hour, Max: time.Hour}
	if p.Wait(ctx) {
		t.Fatal("Wait reported the interval passed on an ended context")
	}
}
