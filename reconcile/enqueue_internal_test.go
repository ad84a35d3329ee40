package reconcile

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/bus/bustest"
	"github.com/homeostat/homeostat/testenv/poll"
)

func TestFoldFor(t *testing.T) {
	every := 20 * time.Millisecond
	for _, tc := range []struct {
		lastPass, want time.Duration
	}{
		{0, every},                    // never passed, or cheaply
		{time.Millisecond, every},     // cheaper than the fold allows for
		{5 * time.Millisecond, every}, // at the fold: no longer
		{15 * time.Millisecond, 60 * time.Millisecond},
		{time.Second, maxFold}, // a long pass does not hold a key for long
	} {
		if got := foldFor(every, tc.lastPass); got != tc.want {
			t.Errorf("foldFor(%v, %v) = %v, want %v", every, tc.lastPass, got, tc.want)
		}
	}
}

// TestEnqueuerHoldsCostlyKeysLonger: a key whose last pass took long is
// not written to the queue before its longer fold is up; another, cheap,
// added with it goes after the usual fold.
func TestEnqueuerHoldsCostlyKeysLonger(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := bustest.Conn(t)
	q, err := conn.Queue(ctx, bus.QueueSpec{Name: "paced"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnqueuer(q, 20*time.Millisecond, "paced", slog.Default())
	done := make(chan struct{})
	go func() { defer close(done); e.run(ctx) }()
	e.passed("default.slow", 50*time.Millisecond)    // a fold of 200ms
	e.passed("default.fast", 50*time.Microsecond)    // the usual 20ms
	e.passed("default.cheaper", 60*time.Millisecond) // then cheap again
	e.passed("default.cheaper", time.Millisecond)
	added := time.Now()
	for _, key := range []string{"default.slow", "default.fast", "default.cheaper"} {
		e.add(key, "", 0, trace.SpanContext{})
	}
	queued := func(key string) bool {
		entry, err := conn.QueueEntry(ctx, "paced", key)
		return err == nil && entry != nil
	}
	poll.Until(t, "the cheap keys queued", 10*time.Second, func() bool { return queued("default.fast") && queued("default.cheaper") })
	var slowAt time.Duration
	poll.Until(t, "the costly key queued", 10*time.Second, func() bool {
		if queued("default.slow") {
			slowAt = time.Since(added)
			return true
		}
		return false
	})
	// Flushed with the keys due within half a fold of it, at the earliest.
	if earliest := 200*time.Millisecond - 10*time.Millisecond; slowAt < earliest {
		t.Fatalf("the costly key was queued %v after it was added, before its fold (%v) was up", slowAt, earliest)
	}
	cancel()
	<-done
}
