package main_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/object"
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
