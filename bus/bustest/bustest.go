// Package bustest starts a real embedded NATS server with JetStream for
// tests, in a temporary directory, and returns a connection to it.
package bustest

import (
	"context"
	"testing"

	"github.com/homeostat/homeostat/bus"
)

// Conn starts an embedded server on a random port with its store in a test
// directory and closes both when the test ends.
func Conn(t testing.TB) *bus.Conn {
	t.Helper()
	return ConnAt(t, t.TempDir())
}

// ConnAt is Conn over a given data directory, for restart tests.
func ConnAt(t testing.TB, dir string) *bus.Conn {
	t.Helper()
	c, err := bus.Connect(context.Background(), bus.Config{
		Embedded: &bus.EmbeddedConfig{DataDir: dir, Port: -1},
		Name:     t.Name(),
	})
	if err != nil {
		t.Fatalf("start embedded NATS: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Client connects another client to the same server, as a second process would.
func Client(t testing.TB, server *bus.Conn) *bus.Conn {
	t.Helper()
	c, err := bus.Connect(context.Background(), bus.Config{URLs: server.ClientURL(), Name: t.Name() + "-client"})
	if err != nil {
		t.Fatalf("connect to embedded NATS: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
