package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// TestAwaitFile: the wait for a component's heap profile ends once the
// file is there, once the component has ended, or at the deadline, and
// not before.
func TestAwaitFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nodeagent-1.heap")
	open := make(chan struct{})
	ended := make(chan struct{})
	close(ended)
	far := time.Now().Add(time.Minute)

	returned := func(done <-chan struct{}, deadline time.Time) <-chan struct{} {
		ch := make(chan struct{})
		go func() { defer close(ch); awaitFile(path, done, deadline) }()
		return ch
	}
	poll.Receive(t, "return for a component that has ended", 10*time.Second, returned(ended, far))

	const short = 300 * time.Millisecond
	start := time.Now()
	poll.Receive(t, "return at the deadline", 10*time.Second, returned(open, start.Add(short)))
	if waited := time.Since(start); waited < short {
		t.Fatalf("returned after %s, before the deadline (%s) with no file", waited, short)
	}

	waiting := returned(open, far)
	if err := os.WriteFile(path, []byte("heap"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Receive(t, "return once the file is there", 10*time.Second, waiting)
}
