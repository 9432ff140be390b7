package targets

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill cmd's process when the process that
// started it dies, so that a server started for a check or by lab serve
// never outlives a test binary killed by a timeout or a Ctrl-C.
func DieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
