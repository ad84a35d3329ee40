package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/testenv"
	"github.com/homeostat/homeostat/testenv/poll"
)

// TestKubectlCreateToken: kubectl itself gets a ServiceAccount's token
// through the TokenRequest subresource, sending the protobuf its typed
// client sends; the token names the account to kubectl until it is
// revoked, and the account may do only what RBAC grants it.
func TestKubectlCreateToken(t *testing.T) {
	kubectl := testenv.Kubectl(t)
	s := startUp(t, t.TempDir(), "--no-agent")
	s.must("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: bot}\n", "apply", "-f", "-")
	home := t.TempDir()
	run := func(kubeconfig string, args ...string) (string, error) {
		cmd := exec.Command(kubectl, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(s.kubeconfig, "create", "token", "bot", "--duration", "20m")
	tok := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(tok, "hst_default_bot-") {
		t.Fatalf("kubectl create token: %v\n%s", err, out)
	}
	admin, err := kubeconfig.Load(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	asBot, err := admin.WithToken("", "bot", tok)
	if err != nil {
		t.Fatal(err)
	}
	botConfig := filepath.Join(t.TempDir(), "bot.kubeconfig")
	if err := asBot.Write(botConfig); err != nil {
		t.Fatal(err)
	}
	if out, err := run(botConfig, "auth", "whoami"); err != nil || !strings.Contains(out, "system:serviceaccount:default:bot") {
		t.Fatalf("kubectl auth whoami with the token: %v\n%s", err, out)
	}
	if out, err := run(botConfig, "get", "pods"); err == nil || !strings.Contains(out, "forbidden") {
		t.Fatalf("kubectl get pods as a ServiceAccount granted nothing: %v\n%s", err, out)
	}
	if out, err := run(s.kubeconfig, "create", "token", "bot", "--duration", "5m"); err == nil || !strings.Contains(out, "spec.expirationSeconds") {
		t.Fatalf("kubectl create token --duration 5m: %v\n%s", err, out)
	}
	if out, err := run(s.kubeconfig, "create", "token", "nobody"); err == nil || !strings.Contains(out, "not found") {
		t.Fatalf("kubectl create token for a missing account: %v\n%s", err, out)
	}
	s.must("", "token", "revoke", tok)
	poll.Until(t, "kubectl refused the revoked token", 15*time.Second, func() bool {
		out, err := run(botConfig, "auth", "whoami")
		return err != nil && strings.Contains(out, "Unauthorized")
	})
}
