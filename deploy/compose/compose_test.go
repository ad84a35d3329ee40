//go:build compose

// Package compose_test drives deploy/compose: Homeostat across a 3-node
// NATS cluster with several replicas of every service, in containers. Run
// it with `go tool task compose-test` (Docker and docker-compose needed).
package compose_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/manifest"
	"github.com/homeostat/homeostat/testenv/poll"
)

const project = "homeostat-compose-test"

func compose(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker-compose", append([]string{"-p", project, "-f", "docker-compose.yml"}, args...)...)
	// The API's host port comes from the environment; unset, the test asks
	// for a free one, so that it never collides with another listener.
	port, _ := os.LookupEnv("HOMEOSTAT_API_PORT")
	cmd.Env = append(os.Environ(), "HOMEOSTAT_API_PORT="+port)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func runningPods(t *testing.T, c *client.Client) map[string]int {
	res, err := c.ResourceFor(context.Background(), "pods")
	if err != nil {
		return nil
	}
	l, err := c.List(context.Background(), res, "default", client.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, o := range l.Items {
		p, err := kinds.DecodePod(o)
		if err == nil && p.Status.Phase == kinds.PodRunning && p.Ready() && !p.Metadata.Deleting() {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

// podCount is how many pods of web exist and are not being deleted.
func podCount(t *testing.T, c *client.Client) int {
	res, err := c.ResourceFor(context.Background(), "pods")
	if err != nil {
		return -1
	}
	l, err := c.List(context.Background(), res, "default", client.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		return -1
	}
	n := 0
	for _, o := range l.Items {
		if !o.Metadata.Deleting() {
			n++
		}
	}
	return n
}

func total(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// apply applies a Deployment's manifest, trying again while the API
// answers 503 (a failover in progress) for up to a minute.
func apply(t *testing.T, c *client.Client, y string) { applyAs(t, c, "deployments.apps", y) }

// applyAs applies a manifest of resource as apply does.
func applyAs(t *testing.T, c *client.Client, resource, y string) {
	t.Helper()
	docs, err := manifest.DecodeBytes([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the apply to go through", time.Minute, func() bool {
		res, err := c.ResourceFor(context.Background(), resource)
		if err == nil {
			_, _, err = c.Apply(context.Background(), res, "default", docs[0].JSON)
		}
		if err != nil {
			t.Logf("apply: %v (trying again)", err)
		}
		return err == nil
	})
}

// adminTarget is the admin kubeconfig the API replicas write in their
// shared data directory, once one has.
func adminTarget(t *testing.T) *kubeconfig.Target {
	t.Helper()
	file := filepath.Join(t.TempDir(), "admin.kubeconfig")
	id := strings.TrimSpace(compose(t, "ps", "-q", "api1"))
	poll.Until(t, "the admin kubeconfig", 3*time.Minute, func() bool {
		return exec.Command("docker", "cp", id+":/data/admin.kubeconfig", file).Run() == nil
	})
	cfg, err := kubeconfig.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	target, err := cfg.Target("")
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// refusesStrangers: the API answers a request without credentials with
// 401, and plain HTTP not at all.
func refusesStrangers(t *testing.T, base, addr string, admin *kubeconfig.Target) {
	t.Helper()
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: admin.TLS.RootCAs}}}
	resp, err := anonymous.Get(base + "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a request without credentials: %d, want 401", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + addr + "/api/v1/pods"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the API answered plain HTTP")
		}
	}
}

// natsRefusesPlaintext: a client that does not trust the cluster's
// authority cannot connect to NATS, which speaks TLS only.
func natsRefusesPlaintext(t *testing.T) {
	t.Helper()
	cmd := exec.Command("docker-compose", "-p", project, "-f", "docker-compose.yml", "run", "--rm", "--no-deps",
		"-e", "HOMEOSTAT_NATS_TLS_CA=", "-e", "HOMEOSTAT_NATS=nats://nats1:4222", "scheduler1", "scheduler")
	port, _ := os.LookupEnv("HOMEOSTAT_API_PORT")
	cmd.Env = append(os.Environ(), "HOMEOSTAT_API_PORT="+port)
	out, err := cmd.CombinedOutput()
	low := strings.ToLower(string(out))
	if err == nil || !(strings.Contains(low, "tls") || strings.Contains(low, "x509") || strings.Contains(low, "certificate")) {
		t.Fatalf("a client without the cluster's authority: %v\n%s", err, out)
	}
}

// natsRefusesAnonymous: a client that trusts the authority but holds no
// credentials the operator signed is refused by NATS.
func natsRefusesAnonymous(t *testing.T) {
	t.Helper()
	cmd := exec.Command("docker-compose", "-p", project, "-f", "docker-compose.yml", "run", "--rm", "--no-deps",
		"scheduler1", "scheduler")
	port, _ := os.LookupEnv("HOMEOSTAT_API_PORT")
	cmd.Env = append(os.Environ(), "HOMEOSTAT_API_PORT="+port)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(strings.ToLower(string(out)), "authorization") {
		t.Fatalf("a client without credentials: %v\n%s", err, out)
	}
}

// agentServesOnlyTheAPI: a pod's log comes through the API, which reaches
// the agent over TLS with its own certificate, while the agent answers
// nobody else, not even a certificate of the cluster's admin.
func agentServesOnlyTheAPI(t *testing.T, c *client.Client, base string, admin *kubeconfig.Target) {
	t.Helper()
	applyAs(t, c, "pods", `apiVersion: v1
kind: Pod
metadata: {name: logged}
spec:
  nodeSelector: {kubernetes.io/hostname: node1}
  containers: [{name: c, command: [homeostat, demo, --listen, ":0"]}]
`)
	var last string
	poll.Until(t, "the pod's log through the API", 2*time.Minute, func() bool {
		resp, err := admin.HTTPClient().Get(base + "/api/v1/namespaces/default/pods/logged/log")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), "listening on")
	})
	t.Logf("log through the API: %s", strings.TrimSpace(last))
	cmd := exec.Command("docker-compose", "-p", project, "-f", "docker-compose.yml", "run", "--rm", "--no-deps",
		"scheduler1", "--kubeconfig", "/pki/admin.kubeconfig", "--server", "https://node1:10250", "get", "pods")
	port, _ := os.LookupEnv("HOMEOSTAT_API_PORT")
	cmd.Env = append(os.Environ(), "HOMEOSTAT_API_PORT="+port)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "forbidden") {
		t.Fatalf("the admin's certificate straight to node1's agent: %v\n%s", err, out)
	}
}

const web = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        command: [homeostat, demo, --listen, ":0"]
        readinessProbe: {exec: {command: [homeostat, --help]}, periodSeconds: 2}
`

func TestClusterSurvivesLosingANATSNodeAndAController(t *testing.T) {
	if _, err := os.Stat("bin/homeostat"); err != nil {
		t.Fatal("build the image first: go tool task compose-build")
	}
	t.Cleanup(func() { compose(t, "down", "-v", "--remove-orphans") })
	compose(t, "up", "-d", "--scale", "controllers=3")
	addr := strings.TrimSpace(compose(t, "port", "api1", "6440"))
	base := "https://" + addr
	target := adminTarget(t)
	c := client.New(base, target.HTTPClient())
	poll.Until(t, "the API", 3*time.Minute, func() bool {
		resp, err := target.HTTPClient().Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	refusesStrangers(t, base, addr, target)
	natsRefusesPlaintext(t)
	natsRefusesAnonymous(t)
	poll.Until(t, "22 nodes", 2*time.Minute, func() bool {
		res, err := c.ResourceFor(context.Background(), "nodes")
		if err != nil {
			return false
		}
		l, err := c.List(context.Background(), res, "", client.ListOptions{})
		return err == nil && len(l.Items) == 22
	})
	apply(t, c, fmt.Sprintf(web, 30))
	poll.Until(t, "30 running pods", 3*time.Minute, func() bool { return total(runningPods(t, c)) == 30 })
	agentServesOnlyTheAPI(t, c, base, target)

	// Lose a NATS node: replicated streams keep a quorum of two, and the
	// change is acted on at once, not at the next resync.
	compose(t, "kill", "nats2")
	lost := time.Now()
	apply(t, c, fmt.Sprintf(web, 40))
	poll.Until(t, "40 pods with a NATS node down", 3*time.Minute, func() bool { return podCount(t, c) == 40 })
	t.Logf("40 pods %s after the NATS node was lost", time.Since(lost).Round(100*time.Millisecond))
	poll.Until(t, "40 running pods with a NATS node down", 3*time.Minute, func() bool { return total(runningPods(t, c)) == 40 })

	// Lose a controller process and a scheduler: the others carry on.
	ids := strings.Fields(compose(t, "ps", "-q", "controllers"))
	if len(ids) != 3 {
		t.Fatalf("%d controller containers, want 3", len(ids))
	}
	if out, err := exec.Command("docker", "kill", ids[0]).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	compose(t, "kill", "scheduler1")
	apply(t, c, fmt.Sprintf(web, 25))
	poll.Until(t, "25 running pods", 3*time.Minute, func() bool {
		m := runningPods(t, c)
		return total(m) == 25
	})
	// Lose a node agent: its pods move elsewhere.
	compose(t, "kill", "node1")
	poll.Until(t, "25 running pods, none on node1", 3*time.Minute, func() bool {
		m := runningPods(t, c)
		return total(m) == 25 && m["node1"] == 0
	})
	compose(t, "start", "nats2")
}
