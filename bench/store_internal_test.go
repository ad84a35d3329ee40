package bench

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// TestStoreThatEndsIsNoticed: a store process that ends before it serves
// fails the bench's start at once, saying where its log is, rather than
// when the wait for its address runs out.
func TestStoreThatEndsIsNoticed(t *testing.T) {
	exe, err := exec.LookPath("false")
	if err != nil {
		t.Fatalf("the test runs false(1) as a store that ends at once: %v", err)
	}
	// Shorter than the bench's own wait of a minute: a start that waited
	// for the address instead of the process would end with this.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, _, err = startStore(ctx, Config{Exe: exe}, t.TempDir())
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("start of a store that ended: %v, want its failure", err)
	}
}
