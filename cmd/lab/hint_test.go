package main

import (
	"strings"
	"testing"
)

// TestHint_OneTierMoreEachTime: the hint is about the first failing check
// at the last run, and each ask shows one tier more, up to the last.
func TestHint_OneTierMoreEachTime(t *testing.T) {
	fakeLoop(t, failingS1, "")
	runLabCommand(t, "check", "1")
	for ask, want := range []int{1, 2, 3, 3} {
		code, out, errs := runLabCommand(t, "hint", "1")
		if code != 0 || !strings.Contains(out, "S1.missing-key") {
			t.Fatalf("ask %d: exit %d\n%s%s", ask+1, code, out, errs)
		}
		if got := strings.Count(out, "\n1. ") + strings.Count(out, "\n2. ") + strings.Count(out, "\n3. "); got != want {
			t.Errorf("ask %d: %d tiers shown, want %d\n%s", ask+1, got, want, out)
		}
	}
}

func TestHint_BeforeAnyRunSaysToCheckFirst(t *testing.T) {
	fakeLoop(t, failingS1, "")
	_, out, _ := runLabCommand(t, "hint", "1")
	if !strings.Contains(out, "make stage-1") {
		t.Fatalf("%s", out)
	}
}
