package api

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/homeostat/homeostat/object"
)

// Limits bound what one identity may hold of the API at once, so that a
// client in a loop slows itself rather than everyone: beyond them the API
// answers 429 with Retry-After at once, instead of queueing until latency
// grows without bound. Members of system:masters are exempt, as Kubernetes
// exempts them from its priority and fairness. Node heartbeats, leases
// and status never pass through the API (agents write them to the bus),
// so user traffic cannot hold them up.
type Limits struct {
	// InFlight caps one user's requests being served, long-running ones
	// aside (100 by default).
	InFlight int
	// LongRunning caps one user's open watches and followed logs (250 by
	// default).
	LongRunning int
	// MaxListPage caps the limit a list may ask for (10,000 by default); a
	// list asking more gets at most this many and a continue token.
	MaxListPage int
}

func (l *Limits) defaults() {
	if l.InFlight <= 0 {
		l.InFlight = 100
	}
	if l.LongRunning <= 0 {
		l.LongRunning = 250
	}
	if l.MaxListPage <= 0 {
		l.MaxListPage = 10_000
	}
}

// counts are requests in flight per user.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

// take counts one more request of user, unless it holds max already.
func (c *counts) take(user string, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[user] >= max {
		return false
	}
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[user]++
	return true
}

func (c *counts) release(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[user]--; c.n[user] <= 0 {
		delete(c.n, user)
	}
}

// longRunning says whether a request stays open as long as its client
// wants: a watch or a followed log.
func longRunning(r *http.Request) bool {
	q := r.URL.Query()
	w, f := q.Get("watch"), q.Get("follow")
	return w == "1" || w == "true" || f == "1" || f == "true"
}

// limit sheds a user's requests beyond its limits with 429.
func (s *Service) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := UserFrom(r.Context())
		if !ok || slices.Contains(u.Groups, GroupMasters) {
			next.ServeHTTP(w, r)
			return
		}
		c, max, what := &s.inFlight, s.limits.InFlight, "requests in flight"
		if longRunning(r) {
			c, max, what = &s.longRunning, s.limits.LongRunning, "watches and followed logs open"
		}
		if !c.take(u.Name, max) {
			writeStatus(w, s.log, tooMany(u.Name, what, max))
			return
		}
		defer c.release(u.Name)
		next.ServeHTTP(w, r)
	})
}

func tooMany(user, what string, max int) *apiError {
	e := newError(http.StatusTooManyRequests, object.ReasonTooManyRequests,
		"too many requests: user %q has %d %s, its limit; retry after a second", user, max, what)
	e.retryAfter = 1
	e.details = &object.StatusDetails{Causes: []object.StatusCause{{Type: "TooManyRequests", Message: fmt.Sprintf("limit of %d %s", max, what)}}}
	return e
}
