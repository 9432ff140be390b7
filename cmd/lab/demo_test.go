package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestDemo_PlainPrintsASecondALineAndASummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two servers for two seconds")
	}
	code, out, errs := runLabCommand(t, "demo", "--plain", "--duration", "2s")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	seconds := regexp.MustCompile(`(?m)^ *00:0\d  stage 0 · naive: \d+ req, \d+ doubles, \d+ lost, Σ . \| stage \d · solution: `)
	// A loaded machine may skip a tick of the two, never both.
	if n := len(seconds.FindAllString(out, -1)); n < 1 {
		t.Errorf("%d per-second lines, want one a second:\n%s", n, out)
	}
	final := regexp.MustCompile(`stage \d · solution +\d+ requests +\d+ replayed +\d+ 409 +0 doubles +0 lost`)
	if !strings.Contains(out, "summary:") || !final.MatchString(out) {
		t.Errorf("no summary with 0 doubles and 0 lost for the final solution:\n%s", out)
	}
}

func TestDemo_RefusesAStageItDoesNotHave(t *testing.T) {
	past := fmt.Sprint(lastStage + 1)
	code, _, errs := runLabCommand(t, "demo", "--plain", "--stage", past)
	if code != 2 || !strings.Contains(errs, "--stage "+past) {
		t.Errorf("exit %d, stderr %q; want 2 naming --stage %s", code, errs, past)
	}
}
