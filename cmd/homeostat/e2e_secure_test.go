package main_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

// TestFirstStartIsSecure: up with nothing configured serves HTTPS only,
// answers a request without credentials with 401, and writes the admin
// kubeconfig where the CLI finds it with no flags; a restart keeps the
// authority, so the kubeconfig keeps working.
func TestFirstStartIsSecure(t *testing.T) {
	home := t.TempDir()
	dataDir := filepath.Join(home, "homeostat")
	env := []string{"XDG_DATA_HOME=" + home}
	s := startUpWith(t, dataDir, env, "--no-agent")
	for _, f := range []string{"admin.kubeconfig", "pki/ca.key", "pki/api.key"} {
		fi, err := os.Stat(filepath.Join(dataDir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, want a file readable by its owner only", f, err)
		}
	}
	bare := func() string {
		t.Helper()
		cmd := exec.Command(binary(t), "get", "nodes")
		cmd.Env = append(os.Environ(), "HOMEOSTAT_SERVER=", "KUBECONFIG=", "XDG_DATA_HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("homeostat get nodes with no flags: %v\n%s", err, out)
		}
		return string(out)
	}
	bare()

	cfg, err := kubeconfig.Load(filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	target, err := cfg.Target("")
	if err != nil {
		t.Fatal(err)
	}
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: target.TLS.RootCAs}}}
	resp, err := anonymous.Get(s.url + "/api/v1/namespaces/default/pods")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st object.Status
	if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(body, &st) != nil || st.Reason != object.ReasonUnauthorized {
		t.Fatalf("a request without credentials: %d %s, want 401 with an Unauthorized Status", resp.StatusCode, body)
	}
	resp, err = http.Get(strings.Replace(s.url, "https://", "http://", 1) + "/api/v1/namespaces/default/pods")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the API answered plain HTTP")
		}
	}

	s.stop()
	s2 := startUpWith(t, dataDir, env, "--no-agent")
	again, err := kubeconfig.Load(filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Clusters[0].Cluster.CertificateAuthorityData) != string(cfg.Clusters[0].Cluster.CertificateAuthorityData) {
		t.Fatal("a restart made a new authority")
	}
	_ = s2
	bare()
}

// TestPlaintextIsLoud: --insecure-plaintext serves plain HTTP and says
// that it is unsafe.
func TestPlaintextIsLoud(t *testing.T) {
	dir := t.TempDir()
	s := startUp(t, dir, "--no-agent", "--insecure-plaintext")
	if !strings.HasPrefix(s.url, "http://") {
		t.Fatalf("API at %s, want plain http", s.url)
	}
	if !strings.Contains(s.out.String(), "WARNING: --insecure-plaintext") {
		t.Fatalf("no warning printed:\n%s", s.out)
	}
	s.must("", "get", "nodes")
}

// TestNoKubeconfigSaysWhere: with nothing to read, a client verb says where
// it looked and how to get a kubeconfig.
func TestNoKubeconfigSaysWhere(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(binary(t), "get", "pods")
	cmd.Env = append(os.Environ(), "HOMEOSTAT_SERVER=", "KUBECONFIG=", "XDG_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	want := "no kubeconfig at " + filepath.Join(home, "homeostat", "admin.kubeconfig")
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("get pods with no kubeconfig: %v\n%s\nwant it to say %q", err, out, want)
	}
}

// TestServiceAccountTokens: a ServiceAccount's token, printed once by
// `token create`, names the account through --token and through the
// kubeconfig `--write-kubeconfig` writes, until it is revoked.
func TestServiceAccountTokens(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	s.must("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: ci}\n", "apply", "-f", "-")
	tok := strings.TrimSpace(s.must("", "token", "create", "ci", "--ttl", "20m"))
	if !strings.HasPrefix(tok, "hst_default_ci-") {
		t.Fatalf("token create printed %q", tok)
	}
	who := s.must("", "auth", "whoami", "--token", tok)
	if !strings.Contains(who, "Username: system:serviceaccount:default:ci") || !strings.Contains(who, "system:serviceaccounts:default") {
		t.Fatalf("whoami with the token:\n%s", who)
	}
	if who := s.must("", "auth", "whoami"); !strings.Contains(who, "Username: admin") {
		t.Fatalf("whoami as the admin:\n%s", who)
	}

	file := filepath.Join(t.TempDir(), "ci.kubeconfig")
	if _, errOut, err := s.run("", "token", "create", "ci", "--write-kubeconfig", file); err != nil || !strings.Contains(errOut, "wrote "+file) {
		t.Fatalf("token create --write-kubeconfig: %v\n%s", err, errOut)
	}
	cmd := exec.Command(binary(t), "--kubeconfig", file, "auth", "whoami")
	cmd.Env = append(os.Environ(), "HOMEOSTAT_SERVER=", "KUBECONFIG=")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "system:serviceaccount:default:ci") {
		t.Fatalf("whoami through the written kubeconfig: %v\n%s", err, out)
	}

	if out := s.must("", "token", "revoke", tok); !strings.Contains(out, "revoked") {
		t.Fatalf("token revoke: %s", out)
	}
	poll.Until(t, "the revoked token refused", 15*time.Second, func() bool {
		_, errOut, err := s.run("", "auth", "whoami", "--token", tok)
		return err != nil && strings.Contains(errOut, "revoked")
	})

	_, errOut, err := s.run("", "token", "create", "nobody")
	if err == nil || !strings.Contains(errOut, "create the account first") {
		t.Fatalf("token create for a missing account: %v\n%s", err, errOut)
	}
	if _, errOut, err := s.run("", "token", "create", "ci", "--ttl", "1m"); err == nil || !strings.Contains(errOut, "at least 10m") {
		t.Fatalf("token create --ttl 1m: %v\n%s", err, errOut)
	}
}

// TestNATSNeedsCredentials: the NATS server of up refuses a client without
// credentials its operator signed; a node agent in another process joins
// with credentials minted for its node (and only its node), and its pods
// run, their status written through the node relay.
func TestNATSNeedsCredentials(t *testing.T) {
	dir := t.TempDir()
	s := startUp(t, dir, "--no-agent")
	if nc, err := nats.Connect(s.nats, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("up's NATS server let in a client without credentials")
	}
	for _, f := range []string{"operator.nk", "account.nk", "system.nk", "homeostat.creds"} {
		path := filepath.Join(dir, "nats", f)
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, want a file readable by its owner only", path, err)
		}
	}
	creds := filepath.Join(t.TempDir(), "outside.creds")
	if _, errOut, err := s.run("", "nats", "creds", "--operator-dir", filepath.Join(dir, "nats"), "--node", "outside", "-o", creds); err != nil {
		t.Fatalf("nats creds: %v\n%s", err, errOut)
	}
	agent := func(ctx context.Context, name string, extra ...string) *exec.Cmd {
		args := append([]string{"nodeagent", "--nats", s.nats, "--name", name, "--data-dir", t.TempDir()}, extra...)
		return exec.CommandContext(ctx, binary(t), args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := agent(ctx, "keyless").CombinedOutput(); err == nil || !strings.Contains(strings.ToLower(string(out)), "authorization") {
		t.Fatalf("an agent without credentials: %v\n%s", err, out)
	}
	if out, err := agent(ctx, "impostor", "--nats-creds", creds).CombinedOutput(); err == nil || !strings.Contains(string(out), "node outside's agent's, not node impostor's") {
		t.Fatalf("an agent with another node's credentials: %v\n%s", err, out)
	}
	actx, stop := context.WithCancel(context.Background())
	cmd := agent(actx, "outside", "--nats-creds", creds)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); _ = cmd.Wait() })
	poll.Until(t, "the outside agent's node Ready", 30*time.Second, func() bool {
		o, _, err := s.run("", "get", "node", "outside")
		return err == nil && strings.Contains(o, "Ready") && !strings.Contains(o, "NotReady")
	})
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: sleeper}\nspec:\n  containers:\n  - {name: main, command: [sleep, \"600\"]}\n"
	if _, errOut, err := s.run(pod, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, errOut)
	}
	poll.Until(t, "the pod Running on the outside node", 30*time.Second, func() bool {
		o, _, err := s.run("", "get", "pod", "sleeper", "-o", "json")
		var p struct {
			Spec   struct{ NodeName string }
			Status struct{ Phase string }
		}
		return err == nil && json.Unmarshal([]byte(o), &p) == nil && p.Spec.NodeName == "outside" && p.Status.Phase == "Running"
	})
	if _, errOut, err := s.run("", "delete", "pod", "sleeper"); err != nil {
		t.Fatalf("delete: %v\n%s", err, errOut)
	}
	poll.Until(t, "the pod removed by its node once stopped", 60*time.Second, func() bool {
		_, errOut, err := s.run("", "get", "pod", "sleeper")
		return err != nil && strings.Contains(errOut, "not found")
	})
}

// TestAgentLogEndpointBeyondLoopbackNeedsTLS: an agent asked to serve logs
// beyond loopback without TLS and a client authority refuses to start,
// saying what to give, before it reaches the bus.
func TestAgentLogEndpointBeyondLoopbackNeedsTLS(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:0"},
		{"--listen", "127.0.0.1:0", "--tls-cert", "x.crt"},
	} {
		cmd := exec.Command(binary(t), append([]string{"nodeagent", "--name", "n1", "--data-dir", t.TempDir(),
			"--nats", "nats://127.0.0.1:1"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--tls-cert, --tls-key and --client-ca") {
			t.Fatalf("nodeagent %v: %v\n%s", args, err, out)
		}
	}
}
