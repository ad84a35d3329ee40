package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/pki"
	"github.com/homeostat/homeostat/testenv/poll"
)

// A running API issues the admin identity again once it is due, with no
// restart, and leaves a current one alone.
func TestAdminKubeconfigRenewedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	short, err := ca.Issue(pki.Request{CommonName: "admin", Organizations: []string{"system:masters"}, Usage: pki.ClientAuth, Lifetime: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a := &adminFile{ca: ca, path: filepath.Join(dir, adminKubeconfig), server: "https://127.0.0.1:6440"}
	if err := identityKubeconfig(ca, a.server, "admin", "default", short).Write(a.path); err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		cfg, err := kubeconfig.Load(a.path)
		if err != nil {
			return ""
		}
		pair, err := pki.ParsePair(cfg.Users[0].User.ClientCertificateData, cfg.Users[0].User.ClientKeyData)
		if err != nil {
			return ""
		}
		return pair.Cert.SerialNumber.String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.keepCurrent(ctx, slog.Default(), 20*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	first := short.Cert.SerialNumber.String()
	var renewed string
	poll.Until(t, "the admin identity issued again", 15*time.Second, func() bool {
		renewed = serial()
		return renewed != "" && renewed != first
	})
	cfg, err := kubeconfig.Load(a.path)
	if err != nil {
		t.Fatal(err)
	}
	if !adminCurrent(cfg, ca, a.server) {
		t.Fatal("the renewed kubeconfig is not current")
	}
}
