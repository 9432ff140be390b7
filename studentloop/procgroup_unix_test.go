//go:build unix

package studentloop

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGoTest_CancelEndsTheRunAndItsChildren: the checks run under go
// test, two processes deep (and lab servers below them); ending the
// context must end the run and every process under it. Killing the go
// command alone ended the run but left the test binary running its
// checks, a minute here.
func TestGoTest_CancelEndsTheRunAndItsChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go")
	}
	g := GoTest{Root: stageModule(t, `package stage1

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestStage(t *testing.T) {
	t.Run("S1.started", func(t *testing.T) {
		os.WriteFile("pid", []byte(strconv.Itoa(os.Getpid())), 0o644)
	})
	t.Run("S1.slow", func(t *testing.T) { time.Sleep(time.Minute) })
}
`)}
	// The run is cancelled once the test binary is running its checks.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		_, err := g.Run(ctx, 1, func(c CheckResult) {
			if c.ID == "S1.started" {
				cancel()
			}
		})
		ended <- err
	}()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("a cancelled run reported an outcome")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run went on 20 s after its context ended")
	}
	raw, err := os.ReadFile(filepath.Join(g.Root, StageDir(1), "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); processAlive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the test binary still ran 5 s after the run was cancelled")
		}
	}
}

// processAlive says whether pid still runs: it exists and is not a zombie
// (an orphan waiting for a parent that does not reap it).
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: it exists
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}
