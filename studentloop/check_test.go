package studentloop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func parseFixture(t *testing.T, name string) Outcome {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o, err := ParseTestJSON(f, 1)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestParseTestJSON_Failing: the scaffold of stage 1 (recorded): the
// failing checks in catalogue order, each report without go test's
// framing. A parser that kept "=== RUN" lines or the run.go:NNN prefix,
// or ordered by completion, fails.
func TestParseTestJSON_Failing(t *testing.T) {
	o := parseFixture(t, "stage1-failing.json")
	if o.State() != Failing || o.Seed != "73172" {
		t.Fatalf("state %q seed %q", o.State(), o.Seed)
	}
	if got := o.FirstFailing(); got != "S1.concurrent-duplicates" {
		t.Errorf("first failing %s, want S1.concurrent-duplicates (catalogue order)", got)
	}
	if len(o.Checks) != 11 || len(o.Passed()) != 4 {
		t.Errorf("%d checks, %d pass; want 11 and 4", len(o.Checks), len(o.Passed()))
	}
	for _, c := range o.Failed() {
		if !strings.HasPrefix(c.Report, "FAIL "+c.ID) || strings.Contains(c.Report, "=== ") || strings.Contains(c.Report, "run.go:") {
			t.Errorf("%s report:\n%s", c.ID, c.Report)
		}
	}
}

func TestParseTestJSON_Passing(t *testing.T) {
	o := parseFixture(t, "stage1-passing.json")
	if o.State() != Passing || len(o.Checks) != 11 || o.FirstFailing() != "" {
		t.Fatalf("state %q, %d checks", o.State(), len(o.Checks))
	}
}

// TestSummarize_BuildFailure: a stage that does not build gets the
// compiler's message and not a word about FAIL blocks.
func TestSummarize_BuildFailure(t *testing.T) {
	o := parseFixture(t, "stage1-build-failed.json")
	if o.State() != DoesNotBuild {
		t.Fatalf("state %q", o.State())
	}
	var b bytes.Buffer
	Summarize(&b, "..", o)
	out := b.String()
	if !strings.Contains(out, "keys.go:30:17: undefined: x") || strings.Contains(out, "FAIL") || strings.Contains(out, "# idemlab") {
		t.Fatalf("summary:\n%s", out)
	}
}

func TestSummarize_PassingNamesTheNextStep(t *testing.T) {
	var b bytes.Buffer
	Summarize(&b, "..", parseFixture(t, "stage1-passing.json"))
	out := b.String()
	for _, want := range []string{"passes all 11 checks", "✓ S1.fail-closed", "docs/lessons/02-fingerprint.md", "lab watch 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestSummarize_FailingPrintsTheBlocks(t *testing.T) {
	var b bytes.Buffer
	o := parseFixture(t, "stage1-failing.json")
	Summarize(&b, "..", o)
	out := b.String()
	if strings.Count(out, "\nFAIL S1.")+strings.Count(out[:5], "FAIL ") != len(o.Failed()) || !strings.Contains(out, "lab hint 1") {
		t.Fatalf("summary:\n%s", out)
	}
}

func TestParseTestJSON_RejectsOtherText(t *testing.T) {
	if _, err := ParseTestJSON(strings.NewReader("ok  idemlab/stages/stage1\n"), 1); err == nil {
		t.Fatal("plain go test output parsed as events")
	}
}

// TestGoTest_RunCheckRunsExactlyThatCheck runs go test on the reference
// solution of stage 0: S0.happy-path alone is one passing check with its
// ID in Only (so it is never recorded); S0.tally, which RUN= alone would
// take for both S0.tally-* checks, runs none. A RunCheck that ran every
// check, or filtered by RUN= only, fails.
func TestGoTest_RunCheckRunsExactlyThatCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	g := GoTest{Root: "..", Solution: true}
	o, err := g.RunCheck(context.Background(), 0, "S0.happy-path")
	if err != nil {
		t.Fatal(err)
	}
	if o.State() != Passing || len(o.Checks) != 1 || o.Checks[0].ID != "S0.happy-path" || o.Only != "S0.happy-path" {
		t.Fatalf("state %q, only %q, checks %+v\n%s", o.State(), o.Only, o.Checks, o.Other)
	}
	o, err = g.RunCheck(context.Background(), 0, "S0.tally")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Checks) != 0 || o.State() != CouldNotCheck {
		t.Fatalf("S0.tally ran %+v, want no check", o.Checks)
	}
}

// stageModule writes a module of its own with a stage 1 whose test file
// is src, as a student's folder would hold it.
func stageModule(t *testing.T, src string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, StageDir(1))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(root, "go.mod"):       "module example.com/lab\n\ngo 1.22\n",
		filepath.Join(dir, "stage_test.go"): src,
	}
	for name, text := range files {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestGoTest_BuildsVetsAndRunsLikeGoTest: a stage that does not compile
// gets the compiler's words and no check; one that compiles but that vet
// refuses is refused as go test would, but its check alone (no vet) still
// runs; the checks run in the stage's folder with SEED set. A runner that
// ran the checks of a stage vet refuses, lost the compiler's message or
// ran them elsewhere fails.
func TestGoTest_BuildsVetsAndRunsLikeGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go")
	}
	const check = `package stage1

import (
	"fmt"
	"os"
	"testing"
)

func TestStage(t *testing.T) {
	t.Run("S1.where", func(t *testing.T) {
		if _, err := os.Stat("stage_test.go"); err != nil || os.Getenv("SEED") != "7" {
			t.Error("FAIL S1.where  not in the stage's folder, or no SEED")
		}
		%s
	})
}

var _ = fmt.Sprint
`
	ctx := context.Background()
	broken := GoTest{Root: stageModule(t, fmt.Sprintf(check, "x := undefinedName"))}
	o, err := broken.Run(ctx, 1)
	if err != nil || o.State() != DoesNotBuild || !strings.Contains(o.Build, "undefined: undefinedName") || strings.Contains(o.Build, "# ") {
		t.Fatalf("a stage that does not compile: %v, state %q, build %q", err, o.State(), o.Build)
	}

	vetted := GoTest{Root: stageModule(t, fmt.Sprintf(check, `fmt.Printf("%d\n", "not a number")`)), Seed: "7"}
	o, err = vetted.Run(ctx, 1)
	if err != nil || o.State() != DoesNotBuild || !strings.Contains(o.Build, "Printf") || len(o.Checks) != 0 {
		t.Fatalf("a stage vet refuses: %v, state %q, build %q, checks %+v", err, o.State(), o.Build, o.Checks)
	}
	o, err = vetted.RunCheck(ctx, 1, "S1.where")
	if err != nil || o.State() != Passing || len(o.Checks) != 1 {
		t.Fatalf("its check alone: %v, state %q, checks %+v\n%s", err, o.State(), o.Checks, o.Other)
	}
}

// TestGoTest_CancelEndsTheRunAndItsChildren: the checks run under go tool
// test2json, three processes deep; ending the context must end them all
// and the run at once. Killing the go command alone left the test binary
// running and holding the output open, so the run ended only with it.
func TestGoTest_CancelEndsTheRunAndItsChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go")
	}
	g := GoTest{Root: stageModule(t, `package stage1

import (
	"testing"
	"time"
)

func TestStage(t *testing.T) {
	t.Run("S1.slow", func(t *testing.T) { time.Sleep(time.Minute) })
}
`)}
	if _, err := g.RunCheck(context.Background(), 1, "S1.none"); err != nil {
		t.Fatal(err) // builds the binary, so that the timing below is the run's
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		_, err := g.Run(ctx, 1)
		ended <- err
	}()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("a cancelled run reported an outcome")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run went on 20 s after its context ended: its test binary was left running")
	}
}
