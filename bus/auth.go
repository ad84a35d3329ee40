package bus

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// User is a client an embedded server accepts: it proves it holds the
// seed of its NKey, and may publish and subscribe only as its rules say.
type User struct {
	// Name is for errors and logs.
	Name string
	// NKey is the user's public key (it begins with U).
	NKey string
	// Publish and Subscribe: subjects allowed (all when empty) and, among
	// them, denied.
	Publish, Subscribe Subjects
}

// Subjects allow and deny subjects, with NATS wildcards.
type Subjects struct {
	Allow, Deny []string
}

// NewUserKey makes an NKey for a user: its seed, kept secret by whoever
// connects with it, and its public key, given to the server.
func NewUserKey() (seed []byte, public string, err error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", err
	}
	if seed, err = kp.Seed(); err != nil {
		return nil, "", err
	}
	public, err = kp.PublicKey()
	return seed, public, err
}

// PublicKey is the public key of a user's seed.
func PublicKey(seed []byte) (string, error) {
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return "", fmt.Errorf("bus: not an NKey seed: %w", err)
	}
	return kp.PublicKey()
}

// nkeyOption authenticates a connection with a seed.
func nkeyOption(seed []byte) (nats.Option, error) {
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("bus: not an NKey seed: %w", err)
	}
	public, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return nats.Nkey(public, kp.Sign), nil
}

// serverUsers are the server's NKey users with their permissions.
func serverUsers(users []User) []*server.NkeyUser {
	out := make([]*server.NkeyUser, 0, len(users))
	for _, u := range users {
		perm := func(s Subjects) *server.SubjectPermission {
			if len(s.Allow) == 0 && len(s.Deny) == 0 {
				return nil
			}
			return &server.SubjectPermission{Allow: s.Allow, Deny: s.Deny}
		}
		nu := &server.NkeyUser{Nkey: u.NKey}
		pub, sub := perm(u.Publish), perm(u.Subscribe)
		if pub != nil || sub != nil {
			nu.Permissions = &server.Permissions{Publish: pub, Subscribe: sub}
		}
		out = append(out, nu)
	}
	return out
}
