//go:build !linux

package targets

import "os/exec"

// DieWithParent does nothing here: only Linux can tie a child's life to
// its parent's. Child servers are still stopped when a check or lab serve
// ends normally.
func DieWithParent(cmd *exec.Cmd) {}
