package targets

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// running is a process started from this one and the way it exited, which
// every wait on it reads and puts back, so that all of them see it: a lab
// server (Child) or a core ledger (CoreChild).
type running struct {
	cmd    *exec.Cmd
	exited chan error
}

// awaitReady calls ready every 10 ms until it reports true: the process
// what, just started, answers at url. It returns an error if the process
// exits first (quoting its stderr), or, killing it, when ctx ends or 15
// seconds pass.
func (c *running) awaitReady(ctx context.Context, what, url string, stderr *lockedBuffer, ready func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(15 * time.Second)
	for {
		if ready() {
			return nil
		}
		select {
		case err := <-c.exited:
			c.exited <- err
			return fmt.Errorf("%s exited as it started (%v)%s", what, err, quote(stderr.String()))
		case <-ctx.Done():
			c.Kill()
			return ctx.Err()
		case <-deadline:
			c.Kill()
			return fmt.Errorf("%s did not answer on %s within 15s%s", what, url, quote(stderr.String()))
		case <-tick.C:
		}
	}
}

// AwaitExit waits until the child exits, reporting true, or stop closes.
func (c *running) AwaitExit(stop <-chan struct{}) bool {
	select {
	case err := <-c.exited:
		c.exited <- err
		return true
	case <-stop:
		return false
	}
}

// WaitExit waits up to d for the child to exit on its own.
func (c *running) WaitExit(d time.Duration) (bool, error) {
	select {
	case err := <-c.exited:
		c.exited <- err
		return true, err
	case <-time.After(d):
		return false, nil
	}
}

// Wait returns when the child exits, with the error it exited with, or
// stops it (see Stop) when ctx ends and returns nil.
func (c *running) Wait(ctx context.Context) error {
	select {
	case err := <-c.exited:
		c.exited <- err
		return err
	case <-ctx.Done():
		c.Stop()
		return nil
	}
}

// Stop asks the child to shut down (SIGTERM: it finishes the requests
// under way), and kills it if it has not within 5 seconds.
func (c *running) Stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	if exited, _ := c.WaitExit(5 * time.Second); !exited {
		c.Kill()
	}
}

// Pid is the child's process id, 0 before it started: what an instructor
// kills to see lab serve start it again.
func (c *running) Pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Kill ends the child with SIGKILL, as a machine losing power would, and
// waits for it to be gone.
func (c *running) Kill() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	c.cmd.Process.Kill()
	err := <-c.exited
	c.exited <- err
}
