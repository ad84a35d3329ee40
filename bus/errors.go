package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Sentinel errors of the object store; wrap-aware, check them with errors.Is.
var (
	// ErrNotFound: the object does not exist (or has been deleted).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a create found the key taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the revision given is not the latest; re-read and retry.
	ErrConflict = errors.New("conflict: the object has been modified")
	// ErrIncompatible: an existing bucket or stream has a configuration this
	// version cannot use.
	ErrIncompatible = errors.New("incompatible configuration")
	// ErrInvalid: the request cannot be carried out as given (bad key, bad revision).
	ErrInvalid = errors.New("invalid request")
	// ErrGone: a watch asked to resume from a revision whose deletions have
	// been compacted away; the caller must list again.
	ErrGone = errors.New("revision compacted")
	// ErrFutureRevision: a watch asked to resume from a revision the store
	// has not reached.
	ErrFutureRevision = errors.New("revision not reached yet")
	// ErrCorrupt: a stored value is not an object of its key (undecodable,
	// null, or naming another object). See CorruptError.
	ErrCorrupt = errors.New("stored value is not a valid object")
	// ErrUnavailable: the bus did not answer (no quorum, no connection, a
	// timeout); the operation may be retried.
	ErrUnavailable = errors.New("bus unavailable")
	// ErrFenced: a create made on the authority of a controller's
	// generation found the key fenced by a later one (see Fence).
	ErrFenced = errors.New("fenced by a later generation of the owner")
	// ErrThrottled: the caller asked more often than it may (the node
	// relay's heartbeats, see heartbeatLimits). It is an ErrUnavailable
	// too: asked again later, it may be answered.
	ErrThrottled = fmt.Errorf("%w: too many requests", ErrUnavailable)
)

// CorruptError says which stored value could not be read and why. It
// matches ErrCorrupt.
type CorruptError struct {
	Resource string
	Key      string
	Revision uint64
	Reason   string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s %q at revision %d: %s: %s", e.Resource, e.Key, e.Revision, ErrCorrupt, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// translate maps NATS and JetStream errors to the store's sentinels, keeping
// the original in the chain for the log.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted),
		errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound),
		errors.Is(err, jetstream.ErrMsgNotFound), errors.Is(err, jetstream.ErrConsumerNotFound):
		return wrap(ErrNotFound, err)
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return wrap(ErrConflict, err)
	case errors.Is(err, jetstream.ErrInvalidKey):
		return wrap(ErrInvalid, err)
	case unavailable(err):
		return wrap(ErrUnavailable, err)
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return wrap(ErrConflict, err)
		case jetstream.JSErrCodeStreamNotFound, jetstream.JSErrCodeConsumerNotFound, jetstream.JSErrCodeMessageNotFound:
			return wrap(ErrNotFound, err)
		case jsErrClusterNotAvail, jsErrClusterNoPeers, jsErrInsufficientResources, jsErrNotEnabled,
			jsErrStreamOffline, jsErrConsumerOffline, jsErrClusterNotLeader, jsErrStreamOfflineReason,
			jsErrConsumerOfflineReason:
			return wrap(ErrUnavailable, err)
		}
		if apiErr.Code == 503 {
			return wrap(ErrUnavailable, err)
		}
	}
	return err
}

// JetStream error codes that mean "not now" rather than "never".
const (
	jsErrClusterNotAvail       = 10008 // JetStream system temporarily unavailable
	jsErrClusterNoPeers        = 10005
	jsErrInsufficientResources = 10023
	jsErrNotEnabled            = 10076
	jsErrStreamOffline         = 10118
	jsErrConsumerOffline       = 10119
	jsErrClusterNotLeader      = 10009
	jsErrStreamOfflineReason   = 10194
	jsErrConsumerOfflineReason = 10195
)

// unavailable reports errors of a bus that cannot answer now: no
// responders, timeouts, a lost or closed connection.
func unavailable(err error) bool {
	for _, e := range []error{
		jetstream.ErrNoHeartbeat, jetstream.ErrNoStreamResponse, jetstream.ErrJetStreamNotEnabled,
		jetstream.ErrServerShutdown, jetstream.ErrConsumerLeadershipChanged, jetstream.ErrAsyncPublishTimeout,
		nats.ErrNoResponders, nats.ErrTimeout, nats.ErrConnectionClosed, nats.ErrDisconnected,
		nats.ErrConnectionReconnecting, nats.ErrConnectionDraining, nats.ErrNoServers,
		context.DeadlineExceeded, io.EOF, syscall.ECONNREFUSED,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// wrap keeps both the sentinel and the cause in the chain, on one line.
func wrap(sentinel, cause error) error {
	if errors.Is(cause, sentinel) {
		return cause
	}
	return fmt.Errorf("%w (%w)", sentinel, cause)
}
