package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ServingOptions describe a serving certificate kept in files.
type ServingOptions struct {
	// Dir holds <Name>.crt and <Name>.key.
	Dir, Name string
	// Hosts are the names and addresses the certificate must be valid for.
	Hosts []string
	// Lifetime of each certificate issued; ServerLifetime when zero.
	Lifetime time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Serving is a serving certificate issued by an authority and kept in
// files. It is issued again when missing, when it does not cover the
// hosts asked for, or when due for renewal (see Due), at start and at any
// handshake, so that a listener renews it without a restart.
type Serving struct {
	ca   *Authority
	opts ServingOptions

	mu  sync.Mutex
	cur *tls.Certificate
}

// NewServing loads the certificate or issues it.
func NewServing(ca *Authority, opts ServingOptions) (*Serving, error) {
	if opts.Lifetime == 0 {
		opts.Lifetime = ServerLifetime
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Serving{ca: ca, opts: opts}
	if c, err := s.load(); err == nil && s.fits(c.Leaf) {
		s.cur = c
		return s, nil
	}
	if err := s.renew(); err != nil {
		return nil, err
	}
	return s, nil
}

// GetCertificate is for tls.Config: the current certificate, renewed first
// when due.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if Due(s.cur.Leaf, s.opts.Now()) {
		if err := s.renewLocked(); err != nil {
			// The old certificate still serves until it expires.
			return s.cur, nil
		}
	}
	return s.cur, nil
}

// Leaf is the certificate served now.
func (s *Serving) Leaf() *x509.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.Leaf
}

func (s *Serving) paths() (string, string) {
	return filepath.Join(s.opts.Dir, s.opts.Name+".crt"), filepath.Join(s.opts.Dir, s.opts.Name+".key")
}

func (s *Serving) load() (*tls.Certificate, error) {
	certPath, keyPath := s.paths()
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	if c.Leaf == nil {
		return nil, errors.New("no leaf certificate")
	}
	return &c, nil
}

// fits says whether c was issued by this authority, covers every host and
// is not due for renewal.
func (s *Serving) fits(c *x509.Certificate) bool {
	if c.CheckSignatureFrom(s.ca.cert) != nil || Due(c, s.opts.Now()) {
		return false
	}
	for _, h := range s.opts.Hosts {
		if c.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func (s *Serving) renew() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewLocked()
}

func (s *Serving) renewLocked() error {
	hosts := slices.Clone(s.opts.Hosts)
	is, err := s.ca.Issue(Request{CommonName: s.opts.Name, Hosts: hosts, Usage: ServerAuth, Lifetime: s.opts.Lifetime, Now: s.opts.Now()})
	if err != nil {
		return fmt.Errorf("pki: issue %s: %w", s.opts.Name, err)
	}
	if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
		return err
	}
	certPath, keyPath := s.paths()
	if err := WriteFile(keyPath, is.KeyPEM, 0o600); err != nil {
		return err
	}
	if err := WriteFile(certPath, is.CertPEM, 0o644); err != nil {
		return err
	}
	c, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		return err
	}
	s.cur = &c
	return nil
}
