//go:build !linux

package bench

import "os/exec"

// dieWithParent: only Linux kills a child as its parent ends; elsewhere
// a bench killed outright leaves its components running.
func dieWithParent(*exec.Cmd) {}
