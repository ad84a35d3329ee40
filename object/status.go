package object

import (
	"fmt"
	"strings"
)

// Status is the error body of every failed request, as in Kubernetes.
type Status struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Status     string         `json:"status"`
	Message    string         `json:"message"`
	Reason     string         `json:"reason"`
	Details    *StatusDetails `json:"details,omitempty"`
	Code       int            `json:"code"`
}

// StatusDetails names the object and lists every failing field.
type StatusDetails struct {
	Name   string        `json:"name,omitempty"`
	Group  string        `json:"group,omitempty"`
	Kind   string        `json:"kind,omitempty"`
	Causes []StatusCause `json:"causes,omitempty"`
}

// StatusCause is one reason a request failed, naming the field and the rule.
type StatusCause struct {
	Type    string `json:"reason"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Status reasons.
const (
	ReasonBadRequest            = "BadRequest"
	ReasonNotFound              = "NotFound"
	ReasonAlreadyExists         = "AlreadyExists"
	ReasonConflict              = "Conflict"
	ReasonGone                  = "Gone"
	ReasonInvalid               = "Invalid"
	ReasonRequestEntityTooLarge = "RequestEntityTooLarge"
	ReasonUnsupportedMediaType  = "UnsupportedMediaType"
	ReasonMethodNotAllowed      = "MethodNotAllowed"
	ReasonForbidden             = "Forbidden"
	ReasonInternalError         = "InternalError"
	ReasonServiceUnavailable    = "ServiceUnavailable"
	ReasonTimeout               = "Timeout"
	ReasonUnauthorized          = "Unauthorized"
	ReasonTooManyRequests       = "TooManyRequests"
)

// Error makes Status usable as an error on the client side.
func (s *Status) Error() string {
	if s.Details == nil || len(s.Details.Causes) == 0 {
		return s.Message
	}
	var b strings.Builder
	b.WriteString(s.Message)
	for _, c := range s.Details.Causes {
		fmt.Fprintf(&b, "\n  - %s", c.Message)
		if c.Type != "" {
			fmt.Fprintf(&b, " [rule: %s]", c.Type)
		}
	}
	return b.String()
}
