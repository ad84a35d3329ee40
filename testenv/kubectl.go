package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
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
	v, _ := built.LoadOrStore(pkg, &buildOnce{})
	b := v.(*buildOnce)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "homeostat-test-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, path.Base(pkg))
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
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
	return Binary(t, "github.com/homeostat/homeostat/testenv/kubectl")
}
