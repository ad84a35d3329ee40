package main_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/testenv/poll"
)

// exampleReady waits until what an example made is ready, through kubectl,
// whoever applied it.
var exampleReady = map[string][][]string{
	"01-demo-deployment.yaml":    {{"rollout", "status", "deployment/demo", "--timeout=90s"}},
	"02-job.yaml":                {{"wait", "--for=condition=Complete", "job/count", "--timeout=90s"}},
	"03-daemonset.yaml":          {{"rollout", "status", "daemonset/node-demo", "--timeout=90s"}},
	"04-widget-kind.yaml":        {{"wait", "--for=condition=Established", "resourcedefinition/widgets.example.com", "--timeout=30s"}},
	"05-widget.yaml":             {{"get", "widget", "first", "-o", "jsonpath={.spec.color}"}},
	"06-read-only-role.yaml":     {{"auth", "can-i", "list", "pods", "--as", "alice"}},
	"07-configmap.yaml":          {{"rollout", "status", "deployment/configured-demo", "--timeout=90s"}},
	"08-crontab-definition.yaml": {{"wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s"}},
	"09-crontab.yaml":            {{"get", "crontab", "nightly", "-o", "jsonpath={.spec.schedule} {.spec.replicas}"}},
}

// exampleSays is what the last readiness command must print.
var exampleSays = map[string]string{"05-widget.yaml": "blue", "06-read-only-role.yaml": "yes", "09-crontab.yaml": "0 3 * * * 1"}

// TestExamplesApplyAsTheyAre: every manifest in examples/ applies as it is,
// with kubectl and with homeostat apply, and what it makes becomes ready.
func TestExamplesApplyAsTheyAre(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	sort.Strings(files)
	for _, f := range files {
		if _, ok := exampleReady[filepath.Base(f)]; !ok {
			t.Fatalf("%s has no readiness check here; add one", filepath.Base(f))
		}
	}
	for _, via := range []string{"kubectl", "homeostat"} {
		t.Run(via, func(t *testing.T) {
			s := startUp(t, t.TempDir())
			k := newKubectl(t, s)
			for _, f := range files {
				name := filepath.Base(f)
				manifest, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if via == "kubectl" {
					k.must("created", string(manifest), "apply", "-f", "-")
				} else {
					s.must(string(manifest), "apply", "-f", "-")
				}
				checks := exampleReady[name]
				var out string
				for _, c := range checks {
					out = k.must("", "", c...)
				}
				if want := exampleSays[name]; !strings.Contains(out, want) {
					t.Fatalf("%s: %q, want %q", name, out, want)
				}
				if name == "01-demo-deployment.yaml" && via == "kubectl" {
					kubectlLogs(t, k)
				}
			}
			if out, _ := k.run("", "auth", "can-i", "delete", "pods", "--as", "alice"); strings.TrimSpace(out) != "no" {
				t.Fatalf("alice may delete pods: %q", out)
			}
		})
	}
}

// kubectlLogs reads the demo's logs through the API as kubectl does, with
// the options it sends.
func kubectlLogs(t *testing.T, k *kubectlRunner) {
	t.Helper()
	poll.Until(t, "the demo to say where it listens", 30*time.Second, func() bool {
		out, err := k.run("", "logs", "deployment/demo")
		return err == nil && strings.Contains(out, "listening on")
	})
	// (kubectl says on stderr which pod it chose.)
	if out := k.must("", "", "logs", "deployment/demo", "--limit-bytes=4"); !strings.HasSuffix(out, "\ndemo") {
		t.Fatalf("kubectl logs --limit-bytes=4: %q", out)
	}
	out := k.must("listening on", "", "logs", "deployment/demo", "--timestamps", "--tail=1")
	if !stamped.MatchString(out) {
		t.Fatalf("kubectl logs --timestamps:\n%s", out)
	}
	if out, err := k.run("", "logs", "deployment/demo", "--limit-bytes=-1"); err == nil {
		t.Fatalf("kubectl logs --limit-bytes=-1 was taken: %s", out)
	}
}
