package bus

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/jwt/v2"
)

// Role is a part of the control plane with credentials of its own.
type Role string

// The roles. The API holds the whole account: it creates every stream
// (Conn.Provision) and is the only writer of the audit stream and of the
// bus's bookkeeping. The others may not create or manage streams, since
// stream management can make the server write any subject; each publishes
// only into the buckets it writes and takes replies on its own inbox.
const (
	RoleAPI         Role = "api"
	RoleControllers Role = "controllers"
	RoleScheduler   Role = "scheduler"
	// RoleSimulated is a host of simulated nodes: it writes every node's
	// Node, heartbeat and pods' status directly.
	RoleSimulated Role = "simulated"
)

// Roles are the roles, in order.
var Roles = []Role{RoleAPI, RoleControllers, RoleScheduler, RoleSimulated}

// roleUserPrefix begins the name of a confined role's user.
const roleUserPrefix = "role:"

// RoleCreds are credentials for a role of the control plane.
func (o *Operator) RoleCreds(r Role) ([]byte, error) {
	if r == RoleAPI {
		return o.ControlPlaneCreds(string(r))
	}
	perms, err := rolePermissions(r)
	if err != nil {
		return nil, err
	}
	return o.creds(roleUserPrefix+string(r), perms)
}

// ParseRole names a role, or says which there are.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("%w: role %q: must be one of %s", ErrInvalid, s, strings.Join(names, ", "))
}

// roleReads is the JetStream API a confined role of the control plane
// uses: reading any stream, and consumers (its work queues' durable ones
// and its acknowledgements included), and the buckets' confirmation
// subjects, which a read writes to (see confirm.go). A push consumer
// delivers only where someone listens, and a confined role listens only
// on its own inbox.
var roleReads = []string{
	"$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST",
	"$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.>", "$JS.ACK.>", "$KV.*",
}

// roleWrites are the subjects each confined role publishes to, beyond
// roleReads. The controllers write objects of every kind, custom ones
// included (the namespace controller and the garbage collector delete
// them), so theirs is every bucket but the bus's bookkeeping and the
// protected ones (roleDenied), and requests to the collector.
var roleWrites = map[Role][]string{
	RoleControllers: {"$KV.*.>", queuePrefix + ">", tracesPrefix + ">", historyPrefix + ">", collectSubject},
	RoleScheduler: {kvPrefix(bucketName("pods")) + ">", kvPrefix(bucketName("events")) + ">",
		kvPrefix(leaseBucket) + ">", nodePodsPrefix + ">", tracesPrefix + ">"},
	RoleSimulated: {kvPrefix(bucketName("pods")) + ">", kvPrefix(bucketName("nodes")) + ">",
		kvPrefix(bucketName("events")) + ">", kvPrefix(leaseBucket) + ">", kvPrefix(nodeLeaseObjects) + ">", tracesPrefix + ">"},
}

// roleDenied are buckets no confined role writes, though a wildcard of
// roleWrites covers them: compaction marks are the API's, and RBAC
// objects and tokens grant access (the controllers remove them through
// the collector).
var roleDenied = func() []string {
	out := []string{kvPrefix(metaBucket) + ">", kvPrefix(ceilingBucket) + ">"}
	for res := range protectedStores {
		out = append(out, kvPrefix(bucketName(res))+">")
	}
	sort.Strings(out)
	return out
}()

func rolePermissions(r Role) (jwt.Permissions, error) {
	writes, ok := roleWrites[r]
	if !ok {
		return jwt.Permissions{}, fmt.Errorf("%w: role %q has no permissions of its own", ErrInvalid, r)
	}
	var p jwt.Permissions
	pub := append(append([]string{}, roleReads...), writes...)
	sort.Strings(pub)
	p.Pub.Allow.Add(pub...)
	p.Pub.Deny.Add(roleDenied...)
	p.Sub.Allow.Add(roleInbox(r) + ".>")
	return p, nil
}

// roleInbox is where a confined role's replies come.
func roleInbox(r Role) string { return "_INBOX_" + string(r) }
