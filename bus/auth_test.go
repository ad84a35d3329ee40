package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/testenv/poll"
)

func userKey(t *testing.T) ([]byte, string) {
	t.Helper()
	seed, public, err := bus.NewUserKey()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := bus.PublicKey(seed); err != nil || got != public || !strings.HasPrefix(public, "U") {
		t.Fatalf("PublicKey = %q, %v; want %q", got, err, public)
	}
	return seed, public
}

// An embedded server with users accepts only them, each with its own
// permissions, and refuses anyone without a key it knows.
func TestEmbeddedServerRequiresAKey(t *testing.T) {
	ctx := context.Background()
	adminSeed, adminPub := userKey(t)
	limitedSeed, limitedPub := userKey(t)
	strangerSeed, _ := userKey(t)
	server, err := bus.Connect(ctx, bus.Config{Name: "server", NKeySeed: adminSeed, Embedded: &bus.EmbeddedConfig{
		DataDir: t.TempDir(), Port: -1, Users: []bus.User{
			{Name: "admin", NKey: adminPub},
			{Name: "limited", NKey: limitedPub, Publish: bus.Subjects{Allow: []string{"allowed.>", "_INBOX.>", "$JS.API.>"}}},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	url := server.ClientURL()

	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a client without a key was let in")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("a client without a key: %v, want an authorization error", err)
	}
	if _, err := bus.Connect(ctx, bus.Config{URLs: url, NKeySeed: strangerSeed, Name: "stranger"}); err == nil {
		t.Fatal("a client with an unknown key was let in")
	}
	if _, err := bus.Connect(ctx, bus.Config{URLs: url, NKeySeed: []byte("not a seed"), Name: "garbled"}); err == nil {
		t.Fatal("a garbled seed was taken")
	}

	limited, err := bus.Connect(ctx, bus.Config{URLs: url, NKeySeed: limitedSeed, Name: "limited"})
	if err != nil {
		t.Fatalf("the limited user: %v", err)
	}
	t.Cleanup(limited.Close)
	// Its permissions hold: a publish outside them is refused by the server.
	violations := make(chan error, 4)
	kp := bus.RawConnForTest(t, url, limitedSeed, func(err error) { violations <- err })
	if err := kp.Publish("forbidden.x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	err = poll.Receive(t, "the server's refusal", 10*time.Second, violations)
	if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		t.Fatalf("publish outside the permissions: %v", err)
	}
}
