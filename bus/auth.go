package bus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// credsOption authenticates a connection with credentials given whole: a
// user JWT and the seed of its key, as a NATS credentials file holds them.
func credsOption(creds []byte) (nats.Option, error) {
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return nil, fmt.Errorf("bus: not NATS credentials: %w", err)
	}
	kp, err := jwt.ParseDecoratedNKey(creds)
	if err != nil {
		return nil, fmt.Errorf("bus: not NATS credentials: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("bus: not NATS credentials: %w", err)
	}
	return nats.UserJWTAndSeed(token, string(seed)), nil
}

// nodeUserPrefix begins the name of a node's user in its credentials.
const nodeUserPrefix = "node:"

// credsNode is the node whose agent's credentials creds are; empty for
// other credentials.
func credsNode(creds []byte) string {
	uc, err := userClaims(creds)
	if err != nil {
		return ""
	}
	node, ok := strings.CutPrefix(uc.Name, nodeUserPrefix)
	if !ok {
		return ""
	}
	return node
}

// credsInbox is the inbox prefix confined credentials may subscribe to
// (a node's, or a confined role's); empty for the whole account's.
func credsInbox(creds []byte) string {
	uc, err := userClaims(creds)
	if err != nil || len(uc.Sub.Allow) != 1 {
		return ""
	}
	inbox, ok := strings.CutSuffix(uc.Sub.Allow[0], ".>")
	if !ok || !strings.HasPrefix(inbox, "_INBOX_") {
		return ""
	}
	return inbox
}

// userClaims are the claims of the user JWT in creds.
func userClaims(creds []byte) (*jwt.UserClaims, error) {
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return nil, err
	}
	return jwt.DecodeUserClaims(token)
}

// adoptUnauthenticatedStore moves the streams of a server that accepted
// every client (JetStream keeps them under the global account, $G) to the
// operator's account, so that a data directory made before authentication
// keeps its objects. Nothing happens when the account has streams already.
func adoptUnauthenticatedStore(dataDir string, o *Operator) error {
	acct, err := o.accountKey()
	if err != nil {
		return err
	}
	global := filepath.Join(dataDir, "jetstream", "$G")
	mine := filepath.Join(dataDir, "jetstream", acct)
	if _, err := os.Stat(global); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(mine); err == nil {
		return nil
	}
	return os.Rename(global, mine)
}
