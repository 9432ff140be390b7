//go:build !unix

package studentloop

import (
	"os/exec"
	"time"
)

// KillGroupOnCancel, where there are no process groups to kill, kills the
// go command at ctx's end and stops waiting for its output a second later,
// so that a cancelled run ends even if the test binary it started lives on.
func KillGroupOnCancel(cmd *exec.Cmd) {
	cmd.WaitDelay = time.Second
}

// yieldCPU does nothing where there are no process groups.
func yieldCPU(*exec.Cmd) {}
