package main

import (
	"strings"
	"testing"

	"idemlab/studentloop"
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

// TestCheckExit_TwoWhenNothingWasJudged: lab check exits as lab grade
// does: 1 for a stage that fails a check or does not build, 2 when no
// check said anything of the server (the checks did not finish, or each
// failing one could not observe what it needs), 0 for a pass. An exit
// status taken from the state alone (1 for all but a pass) fails it.
func TestCheckExit_TwoWhenNothingWasJudged(t *testing.T) {
	pass := studentloop.CheckResult{ID: "S3.a", Passed: true}
	fail := studentloop.CheckResult{ID: "S3.b", Report: "FAIL S3.b  …"}
	unknown := studentloop.CheckResult{ID: "S3.c", Report: "COULD NOT RUN S3.c  …"}
	for _, c := range []struct {
		name string
		o    studentloop.Outcome
		want int
	}{
		{"a pass", studentloop.Outcome{Checks: []studentloop.CheckResult{pass}}, 0},
		{"a failure", studentloop.Outcome{Checks: []studentloop.CheckResult{pass, fail, unknown}}, 1},
		{"a stage that does not build", studentloop.Outcome{Build: "undefined: x"}, 1},
		{"only checks that could not run", studentloop.Outcome{Checks: []studentloop.CheckResult{pass, unknown}}, 2},
		{"checks that did not finish", studentloop.Outcome{Other: "panic: …"}, 2},
	} {
		got := 0
		if err := checkExit(c.o); err != nil {
			ec, ok := err.(*exitCode)
			if !ok || ec.err != nil {
				t.Fatalf("%s: %v, want an exit status without a message (the summary has said it)", c.name, err)
			}
			got = ec.code
		}
		if got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
