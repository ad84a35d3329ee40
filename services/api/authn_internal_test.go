package api

import (
	"crypto/x509"
	"testing"
	"time"
)

// TestVerifiedFor: a verified chain is remembered for a minute at most,
// never past the expiry of any of its certificates.
func TestVerifiedFor(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cert := func(left time.Duration) *x509.Certificate { return &x509.Certificate{NotAfter: now.Add(left)} }
	for _, tc := range []struct {
		name  string
		chain []*x509.Certificate
		want  time.Duration
	}{
		{"long-lived leaf and root", []*x509.Certificate{cert(24 * time.Hour), cert(10 * 365 * 24 * time.Hour)}, verifiedTTL},
		{"leaf expiring soon", []*x509.Certificate{cert(3 * time.Second), cert(24 * time.Hour)}, 3 * time.Second},
		{"root expiring first", []*x509.Certificate{cert(24 * time.Hour), cert(10 * time.Second)}, 10 * time.Second},
		{"expired now", []*x509.Certificate{cert(0), cert(24 * time.Hour)}, 0},
	} {
		if got := verifiedFor(tc.chain, now); got != tc.want {
			t.Errorf("%s: remembered for %s, want %s", tc.name, got, tc.want)
		}
	}
}
