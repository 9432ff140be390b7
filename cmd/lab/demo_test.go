package main

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestDemo_YourCodeThatDoesNotCompileSaysWhere: the error the demo shows
// for a stage that does not compile names the compiler's first error, file
// and line, where it said only that the stage does not compile.
func TestDemo_YourCodeThatDoesNotCompileSaysWhere(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":                   "module broken\n\ngo 1.21\n",
		"stages/stage1/claim.go":   "package stage1\n\nvar _ = claimKey\n",
		"stages/stage1/handler.go": "package stage1\n",
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := demoStages(root).Build(t.Context(), 1)
	want := "stages/stage1 does not compile: stages/stage1/claim.go:3:9: undefined: claimKey"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestFirstCompileError(t *testing.T) {
	out := "# broken/stages/stage1\nstages/stage1/claim.go:3:9: undefined: claimKey\nstages/stage1/claim.go:4:2: undefined: other\n"
	if got := firstCompileError(out); got != "stages/stage1/claim.go:3:9: undefined: claimKey" {
		t.Errorf("first error %q", got)
	}
	if got := firstCompileError("# x\ngo: cannot find main module\n"); got != "go: cannot find main module" {
		t.Errorf("without a compiler line: %q", got)
	}
}
