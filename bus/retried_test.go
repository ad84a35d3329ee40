package bus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A request made while a stream has no leader is never answered. retried
// must make it again after tryTimeout, so that the caller is answered
// soon after the election, not when the whole bound runs out.
func TestRetriedMakesAnUnansweredRequestAgain(t *testing.T) {
	errOther := errors.New("bad request")
	for _, tc := range []struct {
		name string
		// answers says what each attempt does: "silent" waits for its
		// deadline (a request no leader hears), "refused" fails at once
		// as unavailable, "ok" succeeds, "other" fails for good.
		answers  []string
		want     error
		attempts int // 0: as many as fit in the bound
	}{
		{"unanswered, then answered", []string{"silent", "ok"}, nil, 2},
		{"twice unanswered, then answered", []string{"silent", "silent", "ok"}, nil, 3},
		{"refused, then answered", []string{"refused", "refused", "ok"}, nil, 3},
		{"a lasting error ends it", []string{"other", "ok"}, errOther, 1},
		{"never answered: unavailable at the bound", []string{"silent"}, ErrUnavailable, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempts := 0
			start := time.Now()
			err := retried(context.Background(), func(ctx context.Context) error {
				a := tc.answers[min(attempts, len(tc.answers)-1)]
				attempts++
				switch a {
				case "silent":
					<-ctx.Done()
					return translate(fmt.Errorf("request: %w", ctx.Err()))
				case "refused":
					return fmt.Errorf("no leader: %w", ErrUnavailable)
				case "other":
					return errOther
				}
				return nil
			})
			took := time.Since(start)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.attempts > 0 && attempts != tc.attempts {
				t.Errorf("%d attempts, want %d", attempts, tc.attempts)
			}
			// Answered within the bound: not waiting it out on the
			// first request.
			if tc.want == nil && took >= requestTimeout {
				t.Errorf("took %s, the whole bound", took)
			}
		})
	}
}

// The caller's own end stops the retries at once.
func TestRetriedStopsWithItsCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	err := retried(ctx, func(ctx context.Context) error {
		attempts++
		cancel()
		<-ctx.Done()
		return translate(ctx.Err())
	})
	if !errors.Is(err, context.Canceled) || attempts != 1 {
		t.Fatalf("err = %v after %d attempts, want context.Canceled after 1", err, attempts)
	}
}
