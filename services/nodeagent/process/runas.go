package process

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"syscall"

	"github.com/homeostat/homeostat/kinds"
)

// Identity is a user and group id a process runs as.
type Identity struct{ UID, GID uint32 }

// ErrRunAs: a container asks to run as someone the agent cannot, or may
// not, run it as. The container waits with CreateContainerConfigError,
// as in Kubernetes, rather than run as someone else.
var ErrRunAs = errors.New("cannot run the container as asked")

// runAsInput is what decides whom a container runs as.
type runAsInput struct {
	pod, container *kinds.SecurityContext
	// def is the node's user for pods that name none; nil: the agent's.
	def   *Identity
	agent Identity
	// primaryGID finds a user's group when only the user is given.
	primaryGID func(uid uint32) (uint32, bool)
}

// runAs decides whom a container's process runs as: nil runs it as the
// agent runs. A container's fields override its pod's; a pod naming no
// user gets the node's default; a user named without a group gets its
// primary group, else the group of its own number (never root's group
// by accident).
func runAs(in runAsInput) (*Identity, error) {
	var uid, gid *int64
	var nonRoot bool
	for _, sc := range []*kinds.SecurityContext{in.pod, in.container} {
		if sc == nil {
			continue
		}
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
	}
	var who *Identity
	switch {
	case uid != nil:
		who = &Identity{UID: uint32(*uid), GID: uint32(*uid)}
		if g, ok := in.primaryGID(who.UID); ok {
			who.GID = g
		}
	case in.def != nil:
		d := *in.def
		who = &d
	case gid != nil:
		who = &Identity{UID: in.agent.UID}
	}
	if gid != nil {
		who.GID = uint32(*gid)
	}
	effective := in.agent
	if who != nil {
		effective = *who
	}
	if nonRoot && effective.UID == 0 {
		return nil, fmt.Errorf("%w: runAsNonRoot is set and the container would run as root (uid 0): set runAsUser to another uid, or give the node a default pod user (--pod-user)", ErrRunAs)
	}
	if who == nil {
		return nil, nil
	}
	if in.agent.UID != 0 {
		if *who != in.agent {
			return nil, fmt.Errorf("%w: the node agent runs as uid %d gid %d and cannot start a process as uid %d gid %d (only an agent running as root can)",
				ErrRunAs, in.agent.UID, in.agent.GID, who.UID, who.GID)
		}
		return nil, nil // already who the agent is
	}
	return who, nil
}

// credential is the process attribute that makes a process who.
func credential(who *Identity) *syscall.Credential {
	if who == nil {
		return nil
	}
	// No supplementary groups: the agent's (root's) are not the pod's.
	return &syscall.Credential{Uid: who.UID, Gid: who.GID, Groups: []uint32{}}
}

// primaryGID looks a user's primary group up in the system's user database.
func primaryGID(uid uint32) (uint32, bool) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return 0, false
	}
	g, err := strconv.ParseUint(u.Gid, 10, 32)
	return uint32(g), err == nil
}
