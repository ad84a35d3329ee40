package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/pki"
)

// natsKeys are the NKeys the embedded NATS server of `up` accepts: one for
// the roles inside the process and one for node agents in other
// processes, made once in <data-dir>/nats and kept there, readable by
// their owner only. No well-known password exists: a client holds a seed
// or is refused.
type natsKeys struct {
	internal, agent []byte
	agentFile       string
}

func loadOrCreateNATSKeys(dataDir string) (*natsKeys, error) {
	dir := filepath.Join(dataDir, "nats")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	k := &natsKeys{agentFile: filepath.Join(dir, "agent.nk")}
	var err error
	if k.internal, err = loadOrCreateSeed(filepath.Join(dir, "homeostat.nk")); err != nil {
		return nil, err
	}
	if k.agent, err = loadOrCreateSeed(k.agentFile); err != nil {
		return nil, err
	}
	return k, nil
}

// users are the server's users: both may do anything for now; confining
// node agents to their own node's objects is not built yet.
func (k *natsKeys) users() ([]bus.User, error) {
	var users []bus.User
	for name, seed := range map[string][]byte{"homeostat": k.internal, "agent": k.agent} {
		pub, err := bus.PublicKey(seed)
		if err != nil {
			return nil, fmt.Errorf("%s key: %w", name, err)
		}
		users = append(users, bus.User{Name: name, NKey: pub})
	}
	return users, nil
}

func loadOrCreateSeed(path string) ([]byte, error) {
	seed, err := os.ReadFile(path)
	if err == nil {
		if _, err := bus.PublicKey(seed); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return seed, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	seed, _, err = bus.NewUserKey()
	if err != nil {
		return nil, err
	}
	return seed, pki.WriteFile(path, seed, 0o600)
}
