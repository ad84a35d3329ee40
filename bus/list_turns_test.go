package bus

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Lists take turns: with every turn of a connection taken, a list waits
// (here until its deadline) rather than opening one more consumer, and
// goes ahead as soon as a turn is free.
func TestListsTakeTurns(t *testing.T) {
	c, err := Connect(context.Background(), Config{Embedded: &EmbeddedConfig{DataDir: t.TempDir(), Port: -1}, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := c.Store(context.Background(), StoreSpec{Resource: "widgets.example.com", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	for range maxLists {
		c.lists <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.List(ctx, ListOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a list with every turn taken: got %v, want it to wait until its deadline", err)
	}
	<-c.lists
	if _, err := s.List(context.Background(), ListOptions{}); err != nil {
		t.Fatalf("a list with a turn free: %v", err)
	}
}
