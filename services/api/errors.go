package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// apiError is an error that knows its HTTP status and reason.
type apiError struct {
	code    int
	reason  string
	message string
	details *object.StatusDetails
	// retryAfter, in seconds, tells a client when to try again.
	retryAfter int
}

func (e *apiError) Error() string { return e.message }

func newError(code int, reason, format string, args ...any) *apiError {
	return &apiError{code: code, reason: reason, message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, object.ReasonBadRequest, format, args...)
}

func notFound(res *resourceRef, name string) *apiError {
	e := newError(http.StatusNotFound, object.ReasonNotFound, "%s %q not found", res.groupResource(), name)
	e.details = &object.StatusDetails{Name: name, Group: res.group, Kind: res.plural}
	return e
}

// invalid turns a validation failure into 422 with one cause per field.
func invalid(res *resourceRef, inv *schemas.Invalid) *apiError {
	details := &object.StatusDetails{Name: inv.Name, Group: res.group, Kind: res.kind()}
	msgs := make([]string, 0, len(inv.Causes))
	for _, c := range inv.Causes {
		// A cause's message leaves its field out, as Kubernetes' does:
		// kubectl prints each cause as "field: message".
		details.Causes = append(details.Causes, object.StatusCause{Type: c.Rule, Field: c.Field, Message: c.Message})
		msgs = append(msgs, fmt.Sprintf("%s: %s", c.Field, c.Message))
	}
	// The message names every failing field too, as Kubernetes' does,
	// since most clients print only the message.
	all := strings.Join(msgs, ", ")
	if len(msgs) > 1 {
		all = "[" + all + "]"
	}
	e := newError(http.StatusUnprocessableEntity, object.ReasonInvalid, "%s %q is invalid: %s", res.kind(), inv.Name, all)
	e.details = details
	return e
}

// invalidField is a 422 for a single rule checked outside the schema.
func invalidField(res *resourceRef, name, field, rule, msg string) *apiError {
	return invalid(res, &schemas.Invalid{Kind: res.kind(), Name: name, Causes: []schemas.Cause{{Field: field, Rule: rule, Message: msg}}})
}

// storeError maps a bus error to the status a client needs.
func storeError(res *resourceRef, name string, err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, bus.ErrNotFound):
		return notFound(res, name)
	case errors.Is(err, bus.ErrAlreadyExists):
		e := newError(http.StatusConflict, object.ReasonAlreadyExists, "%s %q already exists", res.groupResource(), name)
		e.details = &object.StatusDetails{Name: name, Group: res.group, Kind: res.plural}
		return e
	case errors.Is(err, bus.ErrConflict):
		e := newError(http.StatusConflict, object.ReasonConflict,
			"Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again",
			res.groupResource(), name)
		e.details = &object.StatusDetails{Name: name, Group: res.group, Kind: res.plural}
		return e
	case errors.Is(err, bus.ErrGone):
		return newError(http.StatusGone, object.ReasonGone, "%v; list again to get a current resourceVersion", err)
	case errors.Is(err, bus.ErrInvalid):
		return badRequest("%v", err)
	case errors.Is(err, bus.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return unavailable("the store is unavailable: %v", err)
	case errors.Is(err, bus.ErrFutureRevision):
		e := newError(http.StatusGatewayTimeout, object.ReasonTimeout, "Too large resource version: %v", err)
		e.details = &object.StatusDetails{Causes: []object.StatusCause{{Type: "ResourceVersionTooLarge", Message: "Too large resource version"}}}
		return e
	case errors.Is(err, bus.ErrCorrupt):
		e := newError(http.StatusInternalServerError, object.ReasonInternalError,
			"%v; read the stored bytes with GET on its raw subresource, or remove it with DELETE", err)
		e.details = &object.StatusDetails{Name: name, Group: res.group, Kind: res.plural,
			Causes: []object.StatusCause{{Type: "CorruptObject", Message: err.Error()}}}
		return e
	case errors.Is(err, context.Canceled):
		return newError(499, object.ReasonBadRequest, "request canceled")
	}
	return newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
}

// unavailable is a 503 that asks the client to come back shortly.
func unavailable(format string, args ...any) *apiError {
	e := newError(http.StatusServiceUnavailable, object.ReasonServiceUnavailable, format, args...)
	e.retryAfter = 1
	return e
}

func writeStatus(w http.ResponseWriter, log *slog.Logger, e *apiError) {
	if e.code >= 500 && e.code != http.StatusServiceUnavailable {
		log.Error("request failed", "code", e.code, "err", e.message)
	}
	st := object.Status{
		APIVersion: "v1", Kind: "Status", Status: "Failure",
		Message: e.message, Reason: e.reason, Details: e.details, Code: e.code,
	}
	w.Header().Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.code)
	_ = json.NewEncoder(w).Encode(st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if o, ok := v.(*object.Object); ok && o != nil {
		if b, err := objectJSON(o); err == nil {
			_, _ = w.Write(b)
		}
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// objectJSON is an object as encoding/json's Encoder writes it: the
// object's own encoding, HTML characters escaped, a newline after. Its
// encoding is compact already, so escaping is all encoding/json's
// compaction of it would do, reading it whole once more.
func objectJSON(o *object.Object) ([]byte, error) {
	b, err := object.Encode(o)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(b) + 16)
	json.HTMLEscape(&buf, b)
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}
