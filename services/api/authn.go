package api

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/homeostat/homeostat/console"
	"github.com/homeostat/homeostat/object"
)

// User is who made a request, as authentication found it: the names
// Kubernetes uses, so that RBAC subjects read the same.
type User struct {
	Name   string
	Groups []string
}

// Well-known users and groups.
const (
	// GroupMasters is the group whose members may do anything.
	GroupMasters = "system:masters"
	// GroupAuthenticated holds every authenticated user.
	GroupAuthenticated = "system:authenticated"
	// UserUnsecured is who every request is on a plaintext API.
	UserUnsecured = "system:unsecured"
	// UserAnonymous and GroupUnauthenticated are who a request without
	// valid credentials is, in the audit log.
	UserAnonymous        = "system:anonymous"
	GroupUnauthenticated = "system:unauthenticated"
)

type userKey struct{}

// UserFrom returns the user a request was authenticated as.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok
}

// public are the paths served to anyone: probes and the version (and the
// console's files, which hold nothing but the page).
var public = []string{"/healthz", "/readyz", "/livez", "/version"}

// authenticate finds the request's user before anything else is served:
// a client certificate of the cluster's authority (CN the user, O its
// groups), else a ServiceAccount's bearer token. A request with no valid
// credentials gets 401, but for the public paths. On a plaintext API,
// which checks nothing, every request is the unsecured user, a member of
// system:masters.
func (s *Service) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, e := s.userOf(r)
		if u == nil {
			if slices.Contains(public, r.URL.Path) || r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, console.Prefix) {
				next.ServeHTTP(w, r)
				return
			}
			writeStatus(w, s.log, e)
			return
		}
		real := u
		noteUser(r.Context(), real, nil)
		if r.Header.Get("Impersonate-User") != "" || r.Header.Get("Impersonate-Group") != "" {
			if u, e = s.impersonate(r, u); e != nil {
				writeStatus(w, s.log, e)
				return
			}
		}
		noteUser(r.Context(), real, u)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// userOf is the user a request's credentials name, or nil and why not.
func (s *Service) userOf(r *http.Request) (*User, *apiError) {
	if s.cfg.TLS == nil {
		return &User{Name: UserUnsecured, Groups: []string{GroupMasters, GroupAuthenticated}}, nil
	}
	var why []string
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		u, err := s.certUser(r.TLS.PeerCertificates)
		if u != nil {
			return u, nil
		}
		why = append(why, err)
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, token, _ := strings.Cut(auth, " ")
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			why = append(why, "the Authorization header is not \"Bearer <token>\"")
		} else {
			u, err := s.tokenUser(r.Context(), strings.TrimSpace(token))
			switch {
			case err == nil:
				return u, nil
			case errors.Is(err, errToken):
				why = append(why, err.Error())
			default:
				return nil, unavailable("cannot check the bearer token now: %v", err)
			}
		}
	}
	if len(why) == 0 {
		why = append(why, "the request carries no credentials (a client certificate of the cluster's authority or a bearer token)")
	}
	return nil, newError(http.StatusUnauthorized, object.ReasonUnauthorized, "Unauthorized: %s", strings.Join(why, "; "))
}

// certUser is the user a client certificate names, or nil and why not.
func (s *Service) certUser(certs []*x509.Certificate) (*User, string) {
	key := chainKey(certs)
	if u, ok := s.verified.Get(key); ok {
		return u.(*User), ""
	}
	// Verified here rather than in the handshake, as Kubernetes does, so
	// that a bad certificate gets a 401 that says what is wrong with it.
	opts := x509.VerifyOptions{Roots: s.cfg.TLS.ClientCAs, Intermediates: x509.NewCertPool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	chains, err := certs[0].Verify(opts)
	if err != nil {
		return nil, fmt.Sprintf("client certificate %q: %v", certs[0].Subject.CommonName, err)
	}
	leaf := certs[0]
	if leaf.Subject.CommonName == "" {
		return nil, "the client certificate names no user (an empty CN)"
	}
	groups := append(slices.Clone(leaf.Subject.Organization), GroupAuthenticated)
	u := &User{Name: leaf.Subject.CommonName, Groups: groups}
	if ttl := verifiedFor(chains[0], time.Now()); ttl > 0 {
		s.verified.Add(key, u, ttl)
	}
	return u, ""
}

// A client presents the same chain with each request, on one connection
// or many, and checking its signatures each time was a fifth of the API's
// work under a stream of creates: a verified chain's user is remembered
// for verifiedTTL, never past the chain's expiry. Failures are not, so
// that each says what is wrong.
const (
	verifiedTTL    = time.Minute
	verifiedChains = 4096
)

// chainKey names a presented chain by its certificates' bytes (DER is
// self-delimiting, so their concatenation is unambiguous).
func chainKey(certs []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range certs {
		h.Write(c.Raw)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// verifiedFor is how long a chain verified at now may be taken as
// verified: verifiedTTL, cut short by the first certificate of the chain
// to expire.
func verifiedFor(chain []*x509.Certificate, now time.Time) time.Duration {
	ttl := verifiedTTL
	for _, c := range chain {
		ttl = min(ttl, c.NotAfter.Sub(now))
	}
	return ttl
}

// whoami serves authentication.k8s.io/v1 SelfSubjectReview, which
// `kubectl auth whoami` posts: who the API takes the caller for.
func (s *Service) whoami(w http.ResponseWriter, r *http.Request) {
	u, _ := UserFrom(r.Context())
	if u == nil { // only on the public paths, which this is not
		writeStatus(w, s.log, newError(http.StatusUnauthorized, object.ReasonUnauthorized, "Unauthorized"))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
		"metadata": map[string]any{"creationTimestamp": time.Now().UTC().Truncate(time.Second)},
		"status":   map[string]any{"userInfo": map[string]any{"username": u.Name, "groups": u.Groups}},
	})
}
