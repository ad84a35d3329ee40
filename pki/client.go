package pki

import (
	"crypto/tls"
	"sync"
	"time"
)

// APIClientName is the user the API presents to node agents when it
// fetches a pod's log from them; an agent serving logs beyond loopback
// answers only that certificate of its authority.
const APIClientName = "system:homeostat-api"

// Client is a client certificate kept in memory, issued again when due
// (see Due) at a handshake, so that a long-running client never presents
// an expired one.
type Client struct {
	ca  *Authority
	req Request

	mu  sync.Mutex
	cur *tls.Certificate
}

// NewClient issues a client certificate for the user of req (for
// ClientLifetime when it names no lifetime).
func NewClient(ca *Authority, req Request) (*Client, error) {
	req.Usage = ClientAuth
	if req.Lifetime == 0 {
		req.Lifetime = ClientLifetime
	}
	c := &Client{ca: ca, req: req}
	if err := c.renewLocked(); err != nil {
		return nil, err
	}
	return c, nil
}

// GetClientCertificate is for tls.Config.
func (c *Client) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if Due(c.cur.Leaf, time.Now()) {
		if err := c.renewLocked(); err != nil {
			return c.cur, nil // the old one serves until it expires
		}
	}
	return c.cur, nil
}

func (c *Client) renewLocked() error {
	is, err := c.ca.Issue(c.req)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		return err
	}
	cert.Leaf = is.Cert
	c.cur = &cert
	return nil
}
