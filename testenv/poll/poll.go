// Package poll waits in tests for a state the system must reach, polling a
// condition until a deadline, never sleeping a fixed time in its place.
package poll

import (
	"testing"
	"time"
)

// Until polls cond every 10ms until it holds, failing the test with what
// was awaited once within has passed.
func Until(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	if !Within(within, cond) {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
}

// Within polls cond every 10ms until it holds or within has passed, and
// says whether it held: for a caller that reports the failure itself.
func Within(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Receive waits for a value on ch for at most within and returns it,
// failing the test with what was awaited otherwise: for an event the
// system must send, never a fixed sleep.
func Receive[T any](t testing.TB, what string, within time.Duration, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
	var zero T
	return zero
}
