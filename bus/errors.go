package bus

import (
	"errors"
	"fmt"

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
	// ErrUnavailable: the bus did not answer in time.
	ErrUnavailable = errors.New("bus unavailable")
)

// translate maps JetStream errors to the store's sentinels, keeping the
// original in the chain for the log.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted),
		errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return wrap(ErrNotFound, err)
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return wrap(ErrConflict, err)
	case errors.Is(err, jetstream.ErrInvalidKey):
		return wrap(ErrInvalid, err)
	case errors.Is(err, jetstream.ErrNoHeartbeat), errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrTimeout):
		return wrap(ErrUnavailable, err)
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return wrap(ErrConflict, err)
	}
	return err
}

// wrap keeps both the sentinel and the cause in the chain, on one line.
func wrap(sentinel, cause error) error {
	if errors.Is(cause, sentinel) {
		return cause
	}
	return fmt.Errorf("%w (%w)", sentinel, cause)
}
