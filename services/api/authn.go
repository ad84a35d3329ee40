package api

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"

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
)

type userKey struct{}

// UserFrom returns the user a request was authenticated as.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok
}

// public are the paths served to anyone: probes and the version.
var public = []string{"/healthz", "/readyz", "/livez", "/version"}

// authenticate finds the request's user before anything else is served:
// a client certificate of the cluster's authority, CN the user and O its
// groups. A request with no valid credentials gets 401, but for the public
// paths. On a plaintext API, which checks nothing, every request is the
// unsecured user, a member of system:masters.
func (s *Service) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, why := s.userOf(r)
		if u == nil {
			if slices.Contains(public, r.URL.Path) {
				next.ServeHTTP(w, r)
				return
			}
			writeStatus(w, s.log, newError(http.StatusUnauthorized, object.ReasonUnauthorized, "Unauthorized: %s", why))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// userOf is the user a request's credentials name, or nil and why not.
func (s *Service) userOf(r *http.Request) (*User, string) {
	if s.cfg.TLS == nil {
		return &User{Name: UserUnsecured, Groups: []string{GroupMasters, GroupAuthenticated}}, ""
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, "the request carries no credentials (a client certificate of the cluster's authority)"
	}
	// Verified here rather than in the handshake, as Kubernetes does, so
	// that a bad certificate gets a 401 that says what is wrong with it.
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{Roots: s.cfg.TLS.ClientCAs, Intermediates: x509.NewCertPool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return nil, fmt.Sprintf("client certificate %q: %v", certs[0].Subject.CommonName, err)
	}
	leaf := certs[0]
	if leaf.Subject.CommonName == "" {
		return nil, "the client certificate names no user (an empty CN)"
	}
	groups := append(slices.Clone(leaf.Subject.Organization), GroupAuthenticated)
	return &User{Name: leaf.Subject.CommonName, Groups: groups}, ""
}
