package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd's process when the bench's
// process ends, however it ends: a bench killed outright had left its
// store, controllers, scheduler and simulated nodes running, busy, and
// skewing every run after it. (The kernel sends the signal as the thread
// that started the child ends; Go ends a thread only under a goroutine
// that locked it, which nothing in this process does.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
