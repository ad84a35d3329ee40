package process

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/homeostat/homeostat/kinds"
)

// A process has no mount namespace of its own, so a pod's volumes live in
// its directory and each container sees them through a root of its own:
// mountPath P of a container is $HOMEOSTAT_ROOT/P, a link to the volume
// (or to SubPath within it). A configMap or secret volume is written as
// Kubernetes writes one: the files in a directory of their own, reached
// through the link ..data, which a rewrite swaps in one rename, so a
// reader sees the old files or the new, never a mix.

// envRoot names the variable that holds a container's root.
const envRoot = "HOMEOSTAT_ROOT"

// dataLink is the link a volume's files are reached through.
const dataLink = "..data"

func (r *Runtime) podDir(uid string) string { return filepath.Join(r.cfg.Dir, "pods", uid) }

// volumeDir holds one volume; ".volumes" cannot be a container's name.
func (r *Runtime) volumeDir(uid, volume string) string {
	return filepath.Join(r.podDir(uid), ".volumes", volume)
}

// rootDir is a container's root, which its mounts are in.
func (r *Runtime) rootDir(uid, container string) string {
	return filepath.Join(r.logDir(uid, container), "root")
}

// Project writes the pod's volumes, then links each container's mounts.
func (r *Runtime) Project(pod *kinds.Pod, volumes []kinds.ProjectedVolume) error {
	uid := pod.Metadata.UID
	for _, v := range volumes {
		dir := r.volumeDir(uid, v.Name)
		var err error
		if v.EmptyDir {
			// Any user a container runs as may write it, as in Kubernetes.
			if err = os.MkdirAll(dir, 0o777); err == nil {
				err = os.Chmod(dir, 0o777)
			}
		} else {
			err = writeVolume(dir, v.Files)
		}
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	for _, c := range append(append([]kinds.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			target := filepath.Join(r.volumeDir(uid, m.Name), filepath.FromSlash(m.SubPath))
			at := filepath.Join(r.rootDir(uid, c.Name), filepath.FromSlash(path.Clean("/"+m.MountPath)))
			if err := link(target, at); err != nil {
				return fmt.Errorf("container %s: mount %s: %w", c.Name, m.MountPath, err)
			}
		}
	}
	return nil
}

// link makes at a symbolic link to target, unless it is one already.
func link(target, at string) error {
	if cur, err := os.Readlink(at); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		return err
	}
	tmp := at + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, at)
}

// writeVolume makes dir hold files, unless it holds them already.
func writeVolume(dir string, files map[string]kinds.ProjectedFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if holds(dir, files) {
		return nil
	}
	gen, err := os.MkdirTemp(dir, "..gen_")
	if err != nil {
		return err
	}
	if err := os.Chmod(gen, 0o755); err != nil {
		return err
	}
	tops := map[string]bool{}
	for p, f := range files {
		full := filepath.Join(gen, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, fs.FileMode(f.Mode)); err != nil {
			return err
		}
		// WriteFile's mode is masked by the umask; the volume's is not.
		if err := os.Chmod(full, fs.FileMode(f.Mode)); err != nil {
			return err
		}
		tops[strings.SplitN(p, "/", 2)[0]] = true
	}
	if err := link(filepath.Base(gen), filepath.Join(dir, dataLink)); err != nil {
		return err
	}
	return tidy(dir, filepath.Base(gen), tops)
}

// tidy links each top-level name through ..data, and removes the links
// and generations that are no longer current.
func tidy(dir, gen string, tops map[string]bool) error {
	for t := range tops {
		if err := link(filepath.Join(dataLink, t), filepath.Join(dir, t)); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		switch {
		case n == dataLink || n == gen || tops[n]:
		case strings.HasPrefix(n, "..gen_") || e.Type()&fs.ModeSymlink != 0:
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// holds reports whether dir's current files are exactly files.
func holds(dir string, files map[string]kinds.ProjectedFile) bool {
	cur := filepath.Join(dir, dataLink)
	n := 0
	err := filepath.WalkDir(cur+string(filepath.Separator), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(cur, p)
		f, ok := files[filepath.ToSlash(rel)]
		info, ierr := d.Info()
		if !ok || ierr != nil || uint32(info.Mode().Perm()) != f.Mode {
			return errStale
		}
		data, rerr := os.ReadFile(p)
		if rerr != nil || !bytes.Equal(data, f.Data) {
			return errStale
		}
		n++
		return nil
	})
	return err == nil && n == len(files)
}

var errStale = errors.New("stale")
