package bus

import (
	"context"
	"sync"
	"time"
)

// readTurns bounds the reads of a connection that deliver a whole state
// at once: lists, and watches until they have caught up. Each holds a
// consumer and a burst of messages, here and in the server, so a burst of
// them queues for a turn rather than multiplying the memory of both. A
// watch that has caught up gives its turn back and stays open.
type readTurns chan struct{}

const (
	// maxReads is how many state-delivering reads a connection runs at once.
	maxReads = 16
	// maxTurn is the longest a read keeps its turn: one stalled by a reader
	// that does not read, or by a stream without a leader, holds up the
	// others for no longer than this.
	maxTurn = 2 * time.Second
)

// take waits for a turn; release gives it back and may be called more
// than once.
func (t readTurns) take(ctx context.Context) (release func(), err error) {
	select {
	case t <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	give := sync.OnceFunc(func() { <-t })
	timer := time.AfterFunc(maxTurn, give)
	return func() {
		timer.Stop()
		give()
	}, nil
}
