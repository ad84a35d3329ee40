package main_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// TestAuthCanI: `auth can-i` answers from the authorizer that decides the
// requests themselves, for the caller or the user of --as, and its exit
// status is the answer.
func TestAuthCanI(t *testing.T) {
	dataDir := t.TempDir()
	s := startUp(t, dataDir, "--no-agent")
	s.must("apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n", "apply", "-f", "-")
	s.must(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: User, name: alice}]
`, "apply", "-f", "-")
	canI := func(args ...string) (string, int) {
		t.Helper()
		out, errOut, err := s.run("", append([]string{"auth", "can-i"}, args...)...)
		var exit *exec.ExitError
		switch {
		case err == nil:
			return strings.TrimSpace(out), 0
		case errors.As(err, &exit):
			if errOut != "" && exit.ExitCode() == 1 && out == "" {
				t.Fatalf("can-i %v failed: %s", args, errOut)
			}
			return strings.TrimSpace(out), exit.ExitCode()
		}
		t.Fatalf("can-i %v: %v", args, err)
		return "", 0
	}
	poll.Until(t, "alice's binding in effect", 20*time.Second, func() bool {
		out, _ := canI("create", "deployments", "--as", "alice")
		return out == "yes"
	})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "deployments.apps", "--as", "alice"}, "yes"},
		{[]string{"delete", "pods", "web-1", "--as", "alice"}, "yes"},
		{[]string{"get", "pods/log", "--as", "alice"}, "yes"},
		{[]string{"get", "pods", "--subresource", "log", "--as", "alice"}, "yes"},
		{[]string{"create", "deployments", "-n", "other", "--as", "alice"}, "no"},
		{[]string{"list", "pods", "-A", "--as", "alice"}, "no"},
		{[]string{"list", "nodes", "--as", "alice"}, "no"},
		{[]string{"create", "roles", "--as", "alice"}, "no"},
		{[]string{"get", "/metrics", "--as", "alice"}, "no"},
		{[]string{"get", "/apis", "--as", "alice"}, "yes"},
		{[]string{"list", "nodes", "--as", "eve", "--as-group", "system:masters"}, "yes"},
		{[]string{"*", "*"}, "yes"},
		{[]string{"get", "/metrics"}, "yes"},
	} {
		out, code := canI(c.args...)
		if out != c.want || (code == 0) != (c.want == "yes") {
			t.Errorf("can-i %s: %q, status %d; want %q", strings.Join(c.args, " "), out, code, c.want)
		}
	}
	if out, code := canI("get", "pods", "-q", "-n", "other", "--as", "alice"); out != "" || code != 1 {
		t.Errorf("can-i -q: %q, status %d; want nothing, status 1", out, code)
	}
	_, errOut, err := s.run("", "auth", "can-i", "list", "gizmos", "--as", "alice")
	if err == nil || !strings.Contains(errOut, `does not serve a resource type "gizmos"`) {
		t.Errorf("can-i of an unknown type: %v\n%s", err, errOut)
	}
	// What can-i says is what the request meets.
	if _, errOut, err := s.run("", "get", "pods", "-n", "other", "--as", "alice"); err == nil ||
		!strings.Contains(errOut, `User "alice" cannot list resource "pods"`) {
		t.Errorf("get pods -n other --as alice: %v\n%s", err, errOut)
	}
	s.must("", "get", "pods", "--as", "alice")

	// A certificate for alice, written by `user create`, is alice.
	file := filepath.Join(t.TempDir(), "alice.kubeconfig")
	if out := s.must("", "user", "create", "alice", "--group", "dev", "--data-dir", dataDir, "--write-kubeconfig", file); !strings.Contains(out, "wrote "+file) {
		t.Fatalf("user create: %s", out)
	}
	asAlice := func(args ...string) (string, error) {
		cmd := exec.Command(binary(t), append([]string{"--kubeconfig", file}, args...)...)
		cmd.Env = append(os.Environ(), "HOMEOSTAT_SERVER=", "KUBECONFIG=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := asAlice("auth", "whoami"); err != nil || !strings.Contains(out, "Username: alice") || !strings.Contains(out, "dev") {
		t.Fatalf("whoami with alice's kubeconfig: %v\n%s", err, out)
	}
	if out, err := asAlice("auth", "can-i", "create", "pods"); err != nil || strings.TrimSpace(out) != "yes" {
		t.Fatalf("alice can-i create pods: %v\n%s", err, out)
	}
	if out, err := asAlice("get", "pods", "-n", "other"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Fatalf("alice get pods -n other: %v\n%s", err, out)
	}
	if out, err := asAlice("get", "pods", "--as", "bob"); err == nil || !strings.Contains(out, `cannot impersonate resource "users"`) {
		t.Fatalf("alice --as bob: %v\n%s", err, out)
	}
	if _, errOut, err := s.run("", "user", "create", "x", "--data-dir", t.TempDir(), "--write-kubeconfig", file+".x"); err == nil || !strings.Contains(errOut, "no certificate authority") {
		t.Fatalf("user create without an authority: %v\n%s", err, errOut)
	}
}

// TestAuditCLI: `audit` reads back the writes and refusals, filtered.
func TestAuditCLI(t *testing.T) {
	s := startUp(t, t.TempDir(), "--no-agent")
	s.must("apiVersion: v1\nkind: Namespace\nmetadata: {name: audited}\n", "apply", "-f", "-")
	if _, errOut, err := s.run("apiVersion: v1\nkind: Namespace\nmetadata: {name: sneaky}\n", "apply", "-f", "-", "--as", "mallory"); err == nil || !strings.Contains(errOut, "Forbidden") {
		t.Fatalf("apply as mallory: %v\n%s", err, errOut)
	}
	out := s.must("", "audit", "--user", "mallory")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(out, "admin as mallory") || !strings.Contains(out, "403") {
		t.Fatalf("audit --user mallory:\n%s", out)
	}
	if strings.Contains(out, "audited") {
		t.Fatalf("audit --user mallory shows another's write:\n%s", out)
	}
	out = s.must("", "audit", "--verb", "create", "--since", "1h", "-o", "json")
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			User      struct{ Username string } `json:"user"`
			ObjectRef struct{ Resource, Name string }
			Verb      string `json:"verb"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "EventList" {
		t.Fatalf("audit -o json: %v\n%s", err, out)
	}
	found := false
	for _, e := range list.Items {
		if e.Verb != "create" {
			t.Fatalf("audit --verb create printed a %s", e.Verb)
		}
		found = found || e.ObjectRef.Resource == "namespaces" && e.ObjectRef.Name == "audited" && e.User.Username == "admin"
	}
	if !found {
		t.Fatalf("the namespace's create is not in the log:\n%s", out)
	}
	if _, errOut, err := s.run("", "audit", "--since", "soon"); err == nil || !strings.Contains(errOut, "since") {
		t.Fatalf("audit --since soon: %v\n%s", err, errOut)
	}
}
