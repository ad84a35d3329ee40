package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

func turnsStore(t *testing.T, objects int) (*Conn, *Store) {
	t.Helper()
	c, err := Connect(context.Background(), Config{Embedded: &EmbeddedConfig{DataDir: t.TempDir(), Port: -1}, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := c.Store(context.Background(), StoreSpec{Resource: "widgets.example.com", Kind: "Widget", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range objects {
		o := &object.Object{APIVersion: "test/v1", Kind: "Widget", Spec: json.RawMessage(`{}`),
			Metadata: object.Meta{Name: fmt.Sprintf("w%d", i), Namespace: "default"}}
		if _, err := s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	return c, s
}

// Lists and watches take turns: with every turn of a connection taken, a
// list waits (here until its deadline) and a watch delivers nothing, rather
// than opening one more consumer each; both go ahead once a turn is free,
// and a watch gives its turn back once it has caught up.
func TestReadsTakeTurns(t *testing.T) {
	c, s := turnsStore(t, 3)
	for range maxReads {
		c.turns <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.List(ctx, ListOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a list with every turn taken: got %v, want it to wait until its deadline", err)
	}
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	ch, err := s.Watch(wctx, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		t.Fatalf("a watch with every turn taken delivered %s %s", ev.Type, ev.Key)
	case <-time.After(200 * time.Millisecond):
	}

	<-c.turns
	for n := 0; n < 3; n++ {
		if ev := poll.Receive(t, "the watch's initial state", 10*time.Second, ch); ev.Type != Added {
			t.Fatalf("got %s %s, want Added", ev.Type, ev.Key)
		}
	}
	if ev := poll.Receive(t, "Synced", 10*time.Second, ch); ev.Type != Synced {
		t.Fatalf("got %s %s, want Synced", ev.Type, ev.Key)
	}
	poll.Until(t, "the synced watch to give its turn back", 10*time.Second, func() bool {
		return len(c.turns) == maxReads-1
	})
	if _, err := s.List(context.Background(), ListOptions{}); err != nil {
		t.Fatalf("a list with a turn free: %v", err)
	}
}

// A watch whose reader does not read keeps its turn no longer than
// maxTurn: with every other turn taken, a list still goes ahead.
func TestStalledWatchGivesItsTurnBack(t *testing.T) {
	c, s := turnsStore(t, 5)
	for range maxReads - 1 {
		c.turns <- struct{}{}
	}
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	if _, err := s.Watch(wctx, WatchOptions{Buffer: 1}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the watch to take the last turn", 10*time.Second, func() bool { return len(c.turns) == maxReads })
	ctx, cancel := context.WithTimeout(context.Background(), 10*maxTurn)
	defer cancel()
	if l, err := s.List(ctx, ListOptions{}); err != nil || len(l.Items) != 5 {
		t.Fatalf("a list beside a stalled watch: %v", err)
	}
}
