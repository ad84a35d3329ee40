package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/homeostat/homeostat/kinds"
)

// cgroupRoot is where containers' cgroups go when the machine has cgroups
// v2 with the cpu and memory controllers delegated to us.
const cgroupRoot = "/sys/fs/cgroup/homeostat"

// cgroupsAvailable reports whether limits can be enforced, and why not.
func cgroupsAvailable() (bool, string) {
	b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil {
		return false, "cgroups v2 is not mounted at /sys/fs/cgroup"
	}
	ctrls := string(b)
	if !strings.Contains(ctrls, "memory") || !strings.Contains(ctrls, "cpu") {
		return false, "the cpu and memory cgroup controllers are not available"
	}
	if err := os.MkdirAll(cgroupRoot, 0o755); err != nil {
		return false, "cannot create " + cgroupRoot + ": " + err.Error()
	}
	_ = os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu +memory"), 0o644)
	_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+cpu +memory"), 0o644)
	return true, ""
}

// limit puts pid in a cgroup with the container's limits.
func limit(podUID, container string, pid int, lim kinds.ResourceList) error {
	dir := filepath.Join(cgroupRoot, podUID+"-"+container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if q, ok := lim["memory"]; ok {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(fmt.Sprint(q.IntValue())), 0o644); err != nil {
			return err
		}
	}
	if q, ok := lim["cpu"]; ok {
		quota := q.MilliValue() * 100 // microseconds per 100ms period
		if err := os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d 100000", max(quota, 1000))), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0o644)
}

func removeCgroup(podUID, container string) {
	_ = os.Remove(filepath.Join(cgroupRoot, podUID+"-"+container))
}
