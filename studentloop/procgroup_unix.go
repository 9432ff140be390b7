//go:build unix

package studentloop

import (
	"os/exec"
	"syscall"
	"time"
)

// KillGroupOnCancel makes cmd the leader of a process group of its own and
// has ctx's end kill the whole group: go test starts the stage's test
// binary, which starts lab servers, and killing go alone would leave them
// running the checks; a go test -c killed alone leaves its compiler and
// linker running on (lab demo's and lab serve's builds).
func KillGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
}

// yieldCPU lowers the priority of cmd's process group, which KillGroupOnCancel
// made, to nice 10: what it starts later inherits it. On a machine with few
// cores, a process at nice 10 gets about a tenth of a core that a process
// at the default priority also wants.
func yieldCPU(cmd *exec.Cmd) {
	syscall.Setpriority(syscall.PRIO_PGRP, cmd.Process.Pid, 10)
}
