package main

import (
	"strings"
	"testing"
)

// TestReset_OutsideAClone: without git history there is no scaffold to
// put back, and reset says so instead of touching anything.
func TestReset_OutsideAClone(t *testing.T) {
	fakeLoop(t, passingS1, "yes\n")
	code, _, errs := runLabCommand(t, "reset", "1", "--yes")
	if code == 0 || !strings.Contains(errs, "clone") {
		t.Fatalf("exit %d %s", code, errs)
	}
}
