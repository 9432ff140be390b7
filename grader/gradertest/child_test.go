package gradertest_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/grader/targets"
	"idemlab/kit/labdb"
	"idemlab/solutions/stage0"
)

var subject = grader.Subject{Stage: 0, Name: "solutions/stage0", New: stage0.New}

// TestMain lets this test binary serve solution 0 as a child of itself.
func TestMain(m *testing.M) { gradertest.Main(m, subject) }

// listenable reports whether this process can listen on addr now.
func listenable(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// The parent picks the child's port and hands the listening socket over,
// so that nothing can take the port between the pick and the child's
// start; it keeps no copy, so the port is free once the child is gone; a
// restart comes back on the same port, or on another if it was taken.
func TestChild_HoldsItsPortFromThePickAndGivesItBackWhenGone(t *testing.T) {
	child, err := targets.StartChild(t.Context(), testBinary(t), t.TempDir(), labdb.TestTarget())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(child.DropDB)
	t.Cleanup(child.Kill)
	addr := strings.TrimPrefix(child.URL, "http://")
	if listenable(addr) {
		t.Fatalf("%s is free while the child serves on it", addr)
	}

	child.Kill()
	if !listenable(addr) {
		t.Fatalf("%s is still held once the child is gone: the parent kept a copy of the socket", addr)
	}
	if err := child.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimPrefix(child.URL, "http://"); got != addr {
		t.Fatalf("restarted on %s, want the port it had, %s", got, addr)
	}

	child.Kill()
	squatter, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer squatter.Close()
	if err := child.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimPrefix(child.URL, "http://"); got == addr {
		t.Fatalf("restarted on %s, which another process holds", got)
	}

	taken := &targets.Child{Binary: testBinary(t), DB: t.TempDir() + "/lab.db", Admin: targets.AdminToken(), Addr: addr}
	if err := taken.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "cannot listen") {
		taken.Kill()
		t.Fatalf("started on an address another process holds: %v", err)
	}
}

func testBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}
