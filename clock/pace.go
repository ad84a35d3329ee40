package clock

import (
	"context"
	"time"
)

// Pace spaces out the retries of something that failed for a reason that
// will pass (a bus electing a leader): the first wait is First, each next
// one twice the last, never more than Max. A short Max is the point: the
// thing retried should resume within moments of recovering, not at the end
// of a long backoff that grew while it was down.
type Pace struct {
	First, Max time.Duration
	next       time.Duration
}

// Wait sleeps the next interval, or until ctx ends, and reports whether the
// interval passed.
func (p *Pace) Wait(ctx context.Context) bool {
	d := p.Next()
	return Sleep(ctx, d)
}

// Next returns the next interval and advances the pace.
func (p *Pace) Next() time.Duration {
	d := max(p.next, p.First)
	p.next = min(2*d, p.Max)
	return min(d, p.Max)
}

// Reset starts again from First, after a success.
func (p *Pace) Reset() { p.next = 0 }
