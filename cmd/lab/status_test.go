package main

import (
	"strings"
	"testing"

	"idemlab/studentloop"
)

// TestStatus_NothingRunYet: every stage not started, and the next step is
// stage 0's lesson.
func TestStatus_NothingRunYet(t *testing.T) {
	fakeLoop(t, passingS1, "")
	code, out, _ := runLabCommand(t, "status")
	if code != 0 || strings.Count(out, "not started") != studentloop.Stages || !strings.Contains(out, "next: stage 0 (docs/lessons/00-naive.md)") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestStatus_MovesOn: once stage 0 passes, the next step is stage 1.
func TestStatus_MovesOn(t *testing.T) {
	fakeLoop(t, passingS1, "")
	runLabCommand(t, "check", "0")
	_, out, _ := runLabCommand(t, "status")
	if !strings.Contains(out, "✓ 0    passing") || !strings.Contains(out, "next: stage 1") {
		t.Fatalf("status:\n%s", out)
	}
}
