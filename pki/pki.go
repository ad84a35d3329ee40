// Package pki makes and keeps the certificates Homeostat serves and
// authenticates with: a certificate authority created once in a directory,
// serving certificates renewed before they expire, and client identities
// whose subject names a user (CN) and its groups (O), as Kubernetes reads
// them. Keys are ECDSA P-256; files holding keys are written 0600.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Lifetimes of what the authority issues.
const (
	CALifetime     = 10 * 365 * 24 * time.Hour
	ServerLifetime = 365 * 24 * time.Hour
	ClientLifetime = 365 * 24 * time.Hour
)

// Authority is a certificate authority whose key lives in a directory.
type Authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// Usage is what a certificate is for.
type Usage int

const (
	// ServerAuth certificates are served by a listener.
	ServerAuth Usage = iota
	// ClientAuth certificates identify a client.
	ClientAuth
	// PeerAuth certificates are both: the members of a cluster serve them
	// and present them to each other.
	PeerAuth
)

// Request describes a certificate to issue.
type Request struct {
	// CommonName is the user of a client certificate.
	CommonName string
	// Organizations are the groups of a client certificate.
	Organizations []string
	// Hosts are the DNS names and IP addresses a server certificate is
	// valid for.
	Hosts    []string
	Usage    Usage
	Lifetime time.Duration
	// Now is the issue time; zero means time.Now.
	Now time.Time
}

// Issued is a certificate and its key, PEM-encoded.
type Issued struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
}

// LoadOrCreateCA reads the authority kept in dir (ca.crt, ca.key), creating
// it on first use. Processes starting together over one directory agree
// on one authority: the first creates it under a lock, the others read it.
func LoadOrCreateCA(dir string) (*Authority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	unlock, err := lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return nil, fmt.Errorf("pki: lock %s: %w", dir, err)
	}
	defer unlock()
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	a, err := readCA(certPath, keyPath)
	if errors.Is(err, os.ErrNotExist) {
		return createCA(certPath, keyPath)
	}
	return a, err
}

// ErrNoAuthority: the directory holds no certificate authority.
var ErrNoAuthority = errors.New("pki: no certificate authority")

// LoadCA reads the authority kept in dir, which must exist: for tools
// that issue identities of a running cluster's authority.
func LoadCA(dir string) (*Authority, error) {
	a, err := readCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoAuthority, dir)
	}
	return a, err
}

// readCA reads an authority; an absent certificate is os.ErrNotExist.
func readCA(certPath, keyPath string) (*Authority, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %s exists but its key cannot be read: %v", certPath, err)
	}
	pair, err := ParsePair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", certPath, err)
	}
	if !pair.Cert.IsCA {
		return nil, fmt.Errorf("pki: %s is not a certificate authority", certPath)
	}
	return &Authority{cert: pair.Cert, key: pair.key, certPEM: certPEM}, nil
}

func createCA(certPath, keyPath string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "homeostat-ca@" + host, Organization: []string{"homeostat"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	// The key first: a certificate without its key is refused at the next
	// start, a key without its certificate is simply made again.
	if err := WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return &Authority{cert: cert, key: key, certPEM: certPEM}, nil
}

// CertPEM is the authority's certificate, for clients to trust.
func (a *Authority) CertPEM() []byte { return a.certPEM }

// Cert is the authority's certificate.
func (a *Authority) Cert() *x509.Certificate { return a.cert }

// Pool is a pool holding only the authority's certificate.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.cert)
	return p
}

// Issue signs a new certificate.
func (a *Authority) Issue(r Request) (*Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: r.CommonName, Organization: r.Organizations},
		NotBefore:    now.Add(-5 * time.Minute), // tolerate clocks a little behind
		NotAfter:     now.Add(r.Lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	switch r.Usage {
	case ServerAuth, PeerAuth:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		if r.Usage == PeerAuth {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
		for _, h := range r.Hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else if h != "" {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	case ClientAuth:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if tmpl.NotAfter.After(a.cert.NotAfter) {
		tmpl.NotAfter = a.cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Issued{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM, Cert: cert}, nil
}

// Pair is a parsed certificate and key.
type Pair struct {
	Cert *x509.Certificate
	key  crypto.Signer
}

// ParsePair parses a PEM certificate and its PEM key.
func ParsePair(certPEM, keyPEM []byte) (*Pair, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("no PEM key")
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("the key cannot sign")
	}
	return &Pair{Cert: cert, key: signer}, nil
}

// Due says whether a certificate should be renewed at now: when less than
// a third of its lifetime remains, as kubelet and k3s do.
func Due(c *x509.Certificate, now time.Time) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return now.After(c.NotAfter.Add(-life / 3))
}

// WriteFile writes data to path atomically (a temporary file renamed
// over it), so that a reader never sees half a key.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func encodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}
