package main

import (
	"strings"
	"testing"
)

// TestDiff_AsksUntilTheStagePasses: a stage that does not pass shows a
// spoiler warning and nothing unless the student says yes.
func TestDiff_AsksUntilTheStagePasses(t *testing.T) {
	fakeLoop(t, failingS1, "no\n")
	_, out, _ := runLabCommand(t, "diff", "1")
	if !strings.Contains(out, "spoiler") || strings.Contains(out, "solutions/stage1/keys.go") {
		t.Fatalf("%s", out)
	}
	fakeLoop(t, failingS1, "yes\n")
	_, out, _ = runLabCommand(t, "diff", "1")
	if !strings.Contains(out, "+// stages/stage1") {
		t.Fatalf("%s", out)
	}
}

func TestDiff_NoQuestionOnceItPasses(t *testing.T) {
	fakeLoop(t, passingS1, "")
	runLabCommand(t, "check", "1")
	_, out, _ := runLabCommand(t, "diff", "1")
	if strings.Contains(out, "spoiler") || !strings.Contains(out, "-// solutions/stage1") {
		t.Fatalf("%s", out)
	}
}
