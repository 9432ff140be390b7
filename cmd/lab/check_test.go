package main

import (
	"strings"
	"testing"
)

// TestCheck_RecordsTheProgress: lab check prints the FAIL block, exits 1
// and records the stage as failing on its first failing check; lab status
// then shows it. A check that forgot to record, or exited 0, fails.
func TestCheck_RecordsTheProgress(t *testing.T) {
	fakeLoop(t, failingS1, "")
	code, out, _ := runLabCommand(t, "check", "1")
	if code != 1 || !strings.Contains(out, "FAIL S1.missing-key") || !strings.Contains(out, "make hint N=1") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	_, status, _ := runLabCommand(t, "status")
	if !strings.Contains(status, "failing") || !strings.Contains(status, "1/2") || !strings.Contains(status, "S1.missing-key") {
		t.Fatalf("status:\n%s", status)
	}
}

func TestCheck_PassingSaysTheNextStep(t *testing.T) {
	fakeLoop(t, passingS1, "")
	code, out, _ := runLabCommand(t, "check", "1")
	if code != 0 || !strings.Contains(out, "✓ S1.missing-key") || !strings.Contains(out, "make watch N=2") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
