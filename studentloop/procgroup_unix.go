//go:build unix

package studentloop

import (
	"os/exec"
	"syscall"
	"time"
)

// killGroupOnCancel makes cmd the leader of a process group of its own and
// has ctx's end kill the whole group: go test starts the stage's test
// binary, which starts lab servers, and killing go alone would leave them
// running the checks.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
}
