package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/felixge/httpsnoop"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/audit"
	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/rbac"
)

// auditNote is what the layers inside the audit middleware learn of a
// request that the middleware records afterwards: who made it (filled by
// authenticate) and the name of what it created.
type auditNote struct {
	real, acted *User
	created     string
}

type auditKey struct{}

func noteFrom(ctx context.Context) *auditNote {
	n, _ := ctx.Value(auditKey{}).(*auditNote)
	return n
}

// noteUser records who a request is from, and who it acts as.
func noteUser(ctx context.Context, real, acted *User) {
	if n := noteFrom(ctx); n != nil {
		n.real, n.acted = real, acted
	}
}

// noteCreated records the name of an object a create made (a generated
// one, or the body's), which the path does not hold.
func noteCreated(ctx context.Context, name string) {
	if n := noteFrom(ctx); n != nil {
		n.created = name
	}
}

// audited records a request in the audit log when its level asks for it,
// once it has been answered. The record is appended before the handler
// returns, so the client has its answer only once the record is stored:
// a write the log does not hold is one whose client saw it fail.
func (s *Service) audited(next http.Handler) http.Handler {
	if s.auditLevel == audit.LevelNone {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received := time.Now()
		note := &auditNote{}
		r = r.WithContext(context.WithValue(r.Context(), auditKey{}, note))
		var code int
		w = httpsnoop.Wrap(w, httpsnoop.Hooks{
			WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
				return func(c int) {
					if code == 0 {
						code = c
					}
					next(c)
				}
			},
			Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
				return func(b []byte) (int, error) {
					if code == 0 {
						code = http.StatusOK
					}
					return next(b)
				}
			},
		})
		defer func() {
			if code == 0 {
				code = http.StatusOK
			}
			s.record(r, note, code, received)
		}()
		next.ServeHTTP(w, r)
	})
}

// record appends the audit Event of an answered request, if its level
// records it. A record that cannot be stored is logged: the request has
// been served.
func (s *Service) record(r *http.Request, note *auditNote, code int, received time.Time) {
	if slices.Contains(public, r.URL.Path) && note.real == nil {
		return // probes
	}
	acted := note.acted
	if acted == nil {
		acted = &User{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}}
	}
	a := requestAttributes(r, acted)
	if !s.auditLevel.Records(a.Verb, code) {
		return
	}
	ev := auditEvent(r, note, a, code, received)
	data, err := json.Marshal(ev)
	if err != nil {
		s.log.Error("audit: encode a record", "err", err)
		return
	}
	// Recorded even when the client has gone; the bus bounds the write.
	ctx := context.WithoutCancel(r.Context())
	log := s.auditLog.Load()
	if log == nil {
		s.log.Error("audit: a request answered before the audit log was open is not recorded", "user", ev.User.Username, "verb", ev.Verb, "uri", ev.RequestURI, "code", code)
		return
	}
	// What changed the store is recorded before the client hears of it;
	// what did not is sent without waiting, so that a store that is down
	// does not slow each refusal by its retries.
	if code >= 300 {
		err = log.AppendAsync(a.Verb, ev.AuditID, data)
	} else {
		err = log.Append(ctx, a.Verb, ev.AuditID, data)
	}
	if err != nil {
		s.log.Error("audit: a request is not recorded", "user", ev.User.Username, "verb", ev.Verb, "uri", ev.RequestURI, "code", code, "err", err)
	}
}

func auditEvent(r *http.Request, note *auditNote, a rbac.Attributes, code int, received time.Time) *audit.Event {
	ev := &audit.Event{Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: "Metadata", AuditID: uuid.NewString(),
		Stage: "ResponseComplete", RequestURI: r.URL.RequestURI(), Verb: a.Verb, UserAgent: r.UserAgent(),
		ResponseStatus: audit.ResponseStatus{Code: code}, RequestReceivedTimestamp: received.UTC(), StageTimestamp: time.Now().UTC(),
		User: audit.UserInfo{Username: a.User, Groups: a.Groups}}
	if note.real != nil && note.acted != nil && note.real != note.acted {
		ev.User = audit.UserInfo{Username: note.real.Name, Groups: note.real.Groups}
		ev.ImpersonatedUser = &audit.UserInfo{Username: a.User, Groups: a.Groups}
	} else if note.real != nil && note.acted == nil {
		ev.User = audit.UserInfo{Username: note.real.Name, Groups: note.real.Groups} // refused impersonation
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		ev.SourceIPs = []string{host}
	}
	if a.ResourceRequest {
		ev.ObjectRef = &audit.ObjectRef{Resource: a.Resource, Namespace: a.Namespace, Name: a.Name, APIGroup: a.APIGroup, Subresource: a.Subresource}
		if ev.ObjectRef.Name == "" {
			ev.ObjectRef.Name = note.created
		}
	}
	ev.Annotations = map[string]string{}
	switch code {
	case http.StatusForbidden:
		ev.Annotations[audit.AnnotationDecision] = "forbid"
	case http.StatusUnauthorized:
	default:
		ev.Annotations[audit.AnnotationDecision] = "allow"
	}
	if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
		ev.Annotations[audit.AnnotationTraceID] = sc.TraceID().String()
	}
	return ev
}

// auditEvents serves the audit log: GET /apis/homeostat.io/v1/auditevents
// with user, verb, since (a duration or an RFC 3339 time) and limit (the
// latest that many, 500 by default).
func (s *Service) auditEvents(w http.ResponseWriter, r *http.Request) {
	log := s.auditLog.Load()
	if log == nil {
		writeStatus(w, s.log, unavailable("the audit log is not open: it is off (audit level None), or the API is starting"))
		return
	}
	q := r.URL.Query()
	query := audit.Query{User: q.Get("user"), Verb: q.Get("verb")}
	if v := q.Get("since"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			query.Since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, v); err == nil {
			query.Since = t
		} else {
			writeStatus(w, s.log, badRequest("since=%q: want a duration (1h) or an RFC 3339 time", v))
			return
		}
	}
	limit := 500
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			writeStatus(w, s.log, badRequest("limit=%q: want a positive number", v))
			return
		}
		limit = n
	}
	list := audit.EventList{Kind: "EventList", APIVersion: "audit.k8s.io/v1", Items: []audit.Event{}}
	err := log.Read(r.Context(), query.Verb, query.Since, func(data []byte) error {
		var ev audit.Event
		if json.Unmarshal(data, &ev) != nil || !query.Matches(&ev) {
			return nil
		}
		list.Items = append(list.Items, ev)
		if len(list.Items) > limit {
			list.Items = slices.Delete(list.Items, 0, len(list.Items)-limit)
		}
		return nil
	})
	switch {
	case errors.Is(err, bus.ErrUnavailable):
		writeStatus(w, s.log, unavailable("the audit log cannot be read now: %v", err))
	case err != nil:
		writeStatus(w, s.log, newError(http.StatusInternalServerError, object.ReasonInternalError, "reading the audit log: %v", err))
	default:
		writeJSON(w, http.StatusOK, list)
	}
}
