package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// built are the binaries Binary built in this test process, by package.
var built sync.Map // package path → *buildOnce

type buildOnce struct {
	once sync.Once
	path string
	err  error
}

// Binary is the path of the command at package pkg, built once per test
// process into a directory of its own; the go build cache keeps the
// compilation between runs. RemoveBinaries removes them.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	return binary(t, pkg, nil)
}

// binary builds pkg with more build flags (once per package).
func binary(t testing.TB, pkg string, flags []string) string {
	t.Helper()
	v, _ := built.LoadOrStore(pkg, &buildOnce{})
	b := v.(*buildOnce)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "homeostat-test-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, path.Base(pkg))
		if out, err := exec.Command("go", append(append([]string{"build", "-o", b.path}, flags...), pkg)...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// RemoveBinaries removes what Binary built: for TestMain, after the tests.
func RemoveBinaries() {
	built.Range(func(_, v any) bool {
		if p := v.(*buildOnce).path; p != "" {
			_ = os.RemoveAll(filepath.Dir(p))
		}
		return true
	})
}

// Kubectl is kubectl itself, built from the k8s.io/kubectl module
// (testenv/kubectl), for tests that drive Homeostat with the real client.
// Its first build on a machine takes a minute or two; the build cache
// keeps it after.
func Kubectl(t testing.TB) string {
	t.Helper()
	// The release is the module's (v0.35.10 is kubectl 1.35.10), stamped as
	// Kubernetes' own build does, since kubectl version checks it.
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubectl").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubectl: %v", err)
	}
	minor, patch, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v0."), ".")
	if !ok {
		t.Fatalf("k8s.io/kubectl has version %q, not v0.MINOR.PATCH", out)
	}
	var ldflags []string
	for _, p := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		ldflags = append(ldflags, "-X", p+".gitVersion=v1."+minor+"."+patch, "-X", p+".gitMajor=1", "-X", p+".gitMinor="+minor)
	}
	return binary(t, "github.com/homeostat/homeostat/testenv/kubectl", []string{"-ldflags", strings.Join(ldflags, " ")})
}
