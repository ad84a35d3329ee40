package process

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func readAt(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A rewrite swaps a volume's files at once: the new set appears through
// the same paths, a key gone is gone, and nothing of the old generation
// stays; an unchanged set is not written again.
func TestWriteVolumeSwaps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v")
	one := map[string]kinds.ProjectedFile{"a": {Data: []byte("1"), Mode: 0o644}, "conf/b": {Data: []byte("2"), Mode: 0o600}}
	if err := writeVolume(dir, one); err != nil {
		t.Fatal(err)
	}
	gen, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		t.Fatal(err)
	}
	if readAt(t, filepath.Join(dir, "a")) != "1" || readAt(t, filepath.Join(dir, "conf", "b")) != "2" {
		t.Fatal("files not reachable by their paths")
	}
	if st, err := os.Stat(filepath.Join(dir, "conf", "b")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", st.Mode(), err)
	}
	if err := writeVolume(dir, one); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, dataLink)); again != gen {
		t.Fatalf("an unchanged volume was written again (%s, was %s)", again, gen)
	}
	two := map[string]kinds.ProjectedFile{"a": {Data: []byte("one"), Mode: 0o644}}
	if err := writeVolume(dir, two); err != nil {
		t.Fatal(err)
	}
	if readAt(t, filepath.Join(dir, "a")) != "one" {
		t.Fatal("the new value is not there")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 3 { // ..data, the new generation, a
		t.Fatalf("the volume holds %v, want ..data, one generation and a", names)
	}
	if _, err := os.Lstat(filepath.Join(dir, "conf")); !os.IsNotExist(err) {
		t.Fatalf("a key gone is still there: %v", err)
	}
}

// A container's mounts are links in its own root, to the volume or to a
// path in it.
func TestProjectLinksMounts(t *testing.T) {
	r := &Runtime{cfg: Config{Dir: t.TempDir()}}
	pod := &kinds.Pod{Object: &object.Object{Metadata: object.Meta{UID: "u1"}}, Spec: &kinds.PodSpec{Containers: []kinds.Container{{Name: "c",
		VolumeMounts: []kinds.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}, {Name: "cfg", MountPath: "etc/one.txt", SubPath: "hello"},
			{Name: "tmp", MountPath: "/scratch"}}}}}}
	vols := []kinds.ProjectedVolume{{Name: "cfg", Files: map[string]kinds.ProjectedFile{"hello": {Data: []byte("hi"), Mode: 0o644}}},
		{Name: "tmp", EmptyDir: true}}
	for range 2 {
		if err := r.Project(pod, vols); err != nil {
			t.Fatal(err)
		}
	}
	root := r.rootDir("u1", "c")
	if readAt(t, filepath.Join(root, "etc", "app", "hello")) != "hi" || readAt(t, filepath.Join(root, "etc", "one.txt")) != "hi" {
		t.Fatal("mounts do not reach the files")
	}
	if err := os.WriteFile(filepath.Join(root, "scratch", "x"), []byte("w"), 0o644); err != nil {
		t.Fatalf("an emptyDir is not writable: %v", err)
	}
	if st, err := os.Stat(r.volumeDir("u1", "tmp")); err != nil || st.Mode().Perm() != 0o777 {
		t.Fatalf("emptyDir mode %v, %v", st.Mode(), err)
	}
}
