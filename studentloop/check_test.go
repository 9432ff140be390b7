package studentloop

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
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
