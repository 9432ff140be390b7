package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestHint_OneTierMoreEachTime: the hint is about the first failing check
// at the last run, each ask shows one tier more, up to the last, and each
// says how many steps remain; the code comes only at the last.
func TestHint_OneTierMoreEachTime(t *testing.T) {
	fakeLoop(t, failingS1, "")
	runLabCommand(t, "check", "1")
	for ask, want := range []struct {
		tiers int
		says  string
	}{
		{1, "hint 1 of 4: 3 steps remain; ask again for where in the code"},
		{2, "hint 2 of 4: 2 steps remain; ask again for an outline"},
		{3, "hint 3 of 4: 1 step remains, and it gives the code"},
		{4, "hint 4 of 4: that was the last step, the code"},
		{4, "hint 4 of 4: that was the last step, the code"},
	} {
		code, out, errs := runLabCommand(t, "hint", "1")
		if code != 0 || !strings.Contains(out, "S1.missing-key") {
			t.Fatalf("ask %d: exit %d\n%s%s", ask+1, code, out, errs)
		}
		got := 0
		for i := 1; i <= 4; i++ {
			if strings.Contains(out, fmt.Sprintf("\n%d. ", i)) {
				got++
			}
		}
		if got != want.tiers || !strings.Contains(out, want.says) {
			t.Errorf("ask %d: %d tiers shown, want %d, and %q\n%s", ask+1, got, want.tiers, want.says, out)
		}
		if shown := strings.Contains(out, "4. The code: "); shown != (want.tiers == 4) {
			t.Errorf("ask %d: the code shown %v, want %v\n%s", ask+1, shown, want.tiers == 4, out)
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
