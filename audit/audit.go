// Package audit holds the record of who did what to the API, in the shape
// of Kubernetes' audit.k8s.io/v1 Event, and the pure filters that pick
// records out of it. The API writes one Event per write and per refused
// request (per read too at level All); the bus keeps them in a stream with
// bounded retention; `homeostat audit` reads them back.
package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/homeostat/homeostat/kinds"
)

// Level says which requests are recorded.
type Level string

const (
	// LevelNone records nothing.
	LevelNone Level = "None"
	// LevelWrite records every request that is not a read, and every
	// refused one (401, 403), reads included. The default.
	LevelWrite Level = "Write"
	// LevelAll records every request.
	LevelAll Level = "All"
)

// ParseLevel reads a level, case-insensitively.
func ParseLevel(s string) (Level, error) {
	for _, l := range []Level{LevelNone, LevelWrite, LevelAll} {
		if strings.EqualFold(s, string(l)) {
			return l, nil
		}
	}
	return "", fmt.Errorf("audit level %q: want None, Write or All", s)
}

// Reads are the verbs that change nothing.
var reads = []string{"get", "list", "watch"}

// Records says whether a request of this verb, answered with code, is
// recorded at the level.
func (l Level) Records(verb string, code int) bool {
	switch l {
	case LevelAll:
		return true
	case LevelWrite:
		return !slices.Contains(reads, verb) || code == 401 || code == 403
	}
	return false
}

// UserInfo is who made a request.
type UserInfo struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

// ObjectRef is what a request was about.
type ObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// ResponseStatus is the answer's code, and its reason when it failed.
type ResponseStatus struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Event is one request as recorded.
type Event struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    string            `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     UserInfo          `json:"user"`
	ImpersonatedUser         *UserInfo         `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *ObjectRef        `json:"objectRef,omitempty"`
	ResponseStatus           ResponseStatus    `json:"responseStatus"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// Annotations of an Event.
const (
	AnnotationDecision = "authorization.k8s.io/decision"
	AnnotationReason   = "authorization.k8s.io/reason"
	AnnotationTraceID  = kinds.AnnotationTraceID
)

// EventList is a list of Events, oldest first.
type EventList struct {
	Kind       string  `json:"kind"`
	APIVersion string  `json:"apiVersion"`
	Items      []Event `json:"items"`
}

// Query picks Events: all of its set fields must match.
type Query struct {
	// User matches the user who made the request or the one it acted as.
	User  string
	Verb  string
	Since time.Time
}

// Matches says whether e is one the query asks for.
func (q Query) Matches(e *Event) bool {
	if q.Verb != "" && e.Verb != q.Verb {
		return false
	}
	if !q.Since.IsZero() && e.RequestReceivedTimestamp.Before(q.Since) {
		return false
	}
	if q.User != "" && e.User.Username != q.User && (e.ImpersonatedUser == nil || e.ImpersonatedUser.Username != q.User) {
		return false
	}
	return true
}
