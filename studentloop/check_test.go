package studentloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/kit/labdb"
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
	if got := o.FirstFailing(); got != "S1.sequential-retry" {
		t.Errorf("first failing %s, want S1.sequential-retry (catalogue order, as lesson 01 teaches them)", got)
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
	for _, want := range []string{"passes all 11 checks", "✓ S1.fail-closed", "docs/lessons/02-fingerprint.md", "make watch N=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// TestSummarize_PassingSkipsTheStagesThatPassAlready: a student who
// goes back to stage 1 with stages 2 and 3 passing is sent to stage 4,
// not to stage 2; with every later stage passing, to no stage.
func TestSummarize_PassingSkipsTheStagesThatPassAlready(t *testing.T) {
	o := parseFixture(t, "stage1-passing.json")
	o.Ahead = map[int]bool{2: true, 3: true}
	var b bytes.Buffer
	Summarize(&b, "..", o)
	out := b.String()
	for _, want := range []string{"stages 2 to 3 pass already (make status)", "docs/lessons/04-replay.md", "make watch N=4"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "N=2") {
		t.Errorf("sent to stage 2, which passes:\n%s", out)
	}
	for n := 2; n < Stages; n++ {
		o.Ahead[n] = true
	}
	b.Reset()
	Summarize(&b, "..", o)
	if out := b.String(); !strings.Contains(out, "stages 2 to 9 pass already") || strings.Contains(out, "next:") {
		t.Errorf("with every later stage passing:\n%s", out)
	}
}

// TestSummarize_OneCheckPassing: a run of one check (RUN=) says the
// stage passes its one check, not "all 1 checks".
func TestSummarize_OneCheckPassing(t *testing.T) {
	o := parseFixture(t, "stage1-passing.json")
	o.Checks, o.Only = o.Checks[:1], o.Checks[0].ID
	var b bytes.Buffer
	Summarize(&b, "..", o)
	if out := b.String(); !strings.Contains(out, "passes its one check") || strings.Contains(out, "all 1 checks") {
		t.Errorf("summary:\n%s", out)
	}
}

func TestSummarize_FailingPrintsTheBlocks(t *testing.T) {
	var b bytes.Buffer
	o := parseFixture(t, "stage1-failing.json")
	Summarize(&b, "..", o)
	out := b.String()
	if strings.Count(out, "\nFAIL S1.")+strings.Count(out[:5], "FAIL ") != len(o.Failed()) || !strings.Contains(out, "make hint N=1") {
		t.Fatalf("summary:\n%s", out)
	}
}

// TestSummarize_ACheckThatCouldNotRunIsNoFailure: a check that could not
// observe what it needs is counted apart from the failures, and the
// student is sent to a failure first; with nothing but such checks, to
// no check at all. The failure's block comes first, the check to start
// with. A summary that said "1 fail" and "start with" a check that found
// nothing against the server, or printed its block first, fails.
func TestSummarize_ACheckThatCouldNotRunIsNoFailure(t *testing.T) {
	unknown := CheckResult{ID: "S9.a", Report: "COULD NOT RUN S9.a  a claim\n  could not observe …"}
	failed := CheckResult{ID: "S9.b", Report: "FAIL S9.b  a claim"}
	passed := CheckResult{ID: "S9.c", Passed: true}
	var b bytes.Buffer
	o := Outcome{Stage: 9, Seed: "7", Checks: []CheckResult{unknown, failed, passed}}
	Summarize(&b, "..", o)
	if out := b.String(); !strings.HasPrefix(out, failed.Report) || !strings.Contains(out, "1 of 3 checks pass; 1 fail, 1 could not run (seed 7)") || !strings.Contains(out, "start with S9.b") {
		t.Errorf("a failure and a check that could not run:\n%s", out)
	}
	if got := FirstLine(o); !strings.Contains(got, "first failing: S9.b") || o.First().Report != failed.Report {
		t.Errorf("first line %q, first report %q: want S9.b first", got, o.First().Report)
	}
	b.Reset()
	o.Checks = []CheckResult{unknown, passed}
	Summarize(&b, "..", o)
	if out := b.String(); !strings.Contains(out, "1 of 2 checks pass; 0 fail, 1 could not run") || strings.Contains(out, "start with") || !strings.Contains(out, "says nothing of your server") {
		t.Errorf("only a check that could not run:\n%s", out)
	}
	if got := FirstLine(o); !strings.HasPrefix(got, "? stage 9") || !strings.Contains(got, "S9.a could not run") {
		t.Errorf("first line %q, want it to say S9.a could not run", got)
	}
	if got := o.First(); got.ID != "" || o.FirstFailing() != "" {
		t.Errorf("with nothing but a check that could not run, the first failing check is %q, want none", got.ID)
	}
}

// TestWhyNot_IsTheReportsWhyNotOnOneLine: what a check that could not run
// could not observe, read back from the block grader.Format prints, every
// line of it; nothing for a failure.
func TestWhyNot_IsTheReportsWhyNotOnOneLine(t *testing.T) {
	r := grader.Result{Check: grader.Check{ID: "S9.a", Claim: "a claim", Lesson: "docs/lessons/09-x.md#y"},
		Err: errors.New("the outbox table is not there\nrun the stage's migrations")}
	c := CheckResult{ID: "S9.a", Report: strings.TrimSpace(grader.Format(r, "make stage-9 RUN=S9.a SEED=7"))}
	if got, want := c.WhyNot(), "the outbox table is not there run the stage's migrations"; got != want {
		t.Errorf("why not %q, want %q, from\n%s", got, want, c.Report)
	}
	if got := (CheckResult{ID: "S9.b", Report: "FAIL S9.b  a claim\n  why not   …"}).WhyNot(); got != "" {
		t.Errorf("a failure's why not: %q, want none", got)
	}
}

// TestParseTestJSON_APanicShowsWhere: a stage whose code panics (a
// relay's nil pointer, say) kills the test binary in the middle of the
// checks, and go test gives the panic's message and stack to the check
// that printed last, which never ends. The outcome says the checks did
// not finish and shows them, under that check's name, without go test's
// framing. A parser that kept only the output outside any check told the
// student nothing of why.
func TestParseTestJSON_APanicShowsWhere(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"start"}`,
		`{"Action":"run","Test":"TestStage"}`,
		`{"Action":"output","Test":"TestStage","Output":"    gradertest.go:43: seed 3 (repeat with SEED=3)\n"}`,
		`{"Action":"output","Test":"TestStage/S9.posted-once","Output":"=== RUN   TestStage/S9.posted-once\n"}`,
		`{"Action":"pass","Test":"TestStage/S9.posted-once"}`,
		`{"Action":"output","Test":"TestStage/S9.core-down","Output":"=== CONT  TestStage/S9.core-down\n"}`,
		`{"Action":"output","Test":"TestStage/S9.lost-answers","Output":"=== CONT  TestStage/S9.lost-answers\n"}`,
		`{"Action":"output","Test":"TestStage/S9.lost-answers","Output":"panic: runtime error: invalid memory address or nil pointer dereference\n"}`,
		`{"Action":"output","Test":"TestStage/S9.lost-answers","Output":"\tidemlab/stages/stage9/outbox.go:71 +0x36\n"}`,
		`{"Action":"output","Output":"FAIL\tidemlab/stages/stage9\t0.945s\n"}`,
		`{"Action":"fail"}`,
	}, "\n")
	o, err := ParseTestJSON(strings.NewReader(stream), 9)
	if err != nil {
		t.Fatal(err)
	}
	if o.State() != CouldNotCheck {
		t.Fatalf("state %q, want %q", o.State(), CouldNotCheck)
	}
	for _, want := range []string{"S9.lost-answers was running as the checks stopped", "panic: runtime error: invalid memory address", "outbox.go:71"} {
		if !strings.Contains(o.Other, want) {
			t.Errorf("no %q in what the run printed:\n%s", want, o.Other)
		}
	}
	if strings.Contains(o.Other, "=== ") || strings.Contains(o.Other, "S9.core-down") {
		t.Errorf("go test's framing, or a check that printed nothing, in what the run printed:\n%s", o.Other)
	}
}

func TestParseTestJSON_RejectsOtherText(t *testing.T) {
	if _, err := ParseTestJSON(strings.NewReader("ok  idemlab/stages/stage1\n"), 1); err == nil {
		t.Fatal("plain go test output parsed as events")
	}
}

// TestGoTest_OnlyRunsTheChecksRUNNames runs go test on the reference
// solution of stage 0 with Only set, as make stage-0 RUN=… does: only
// the checks whose ID contains it run, and the outcome says so (it is
// never recorded as the stage's progress). A runner that ignored Only
// fails.
func TestGoTest_OnlyRunsTheChecksRUNNames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	g := GoTest{Root: "..", Solution: true, Only: "S0.happy-path"}
	o, err := g.Run(context.Background(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.State() != Passing || len(o.Checks) != 1 || o.Checks[0].ID != "S0.happy-path" || o.Only != "S0.happy-path" {
		t.Fatalf("state %q, only %q, checks %+v\n%s", o.State(), o.Only, o.Checks, o.Other)
	}
}

// TestGoTest_RunsEightChecksAtOnce: eight checks that each wait until all
// eight have started pass only if the run lets eight run at once, as a
// stage's checks, which mostly wait, are run on SQLite (checksAtOnce);
// go test on its own runs as many as there are cores, two on the lab's
// machines, and then each of them gives up after 20 s and fails.
func TestGoTest_RunsEightChecksAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go")
	}
	if labdb.EngineOfTarget(labdb.TestTarget()) == labdb.PostgreSQL {
		t.Skip("on PostgreSQL a stage's checks run four at a time")
	}
	g := GoTest{Root: stageModule(t, `package stage1

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

var all sync.WaitGroup

func TestStage(t *testing.T) {
	all.Add(8)
	for i := range 8 {
		t.Run(fmt.Sprintf("S1.check-%d", i), func(t *testing.T) {
			t.Parallel()
			all.Done()
			met := make(chan struct{})
			go func() { all.Wait(); close(met) }()
			select {
			case <-met:
			case <-time.After(20 * time.Second):
				t.Error("FAIL S1.check  the eight checks did not all run at once")
			}
		})
	}
}
`)}
	o, err := g.Run(context.Background(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.State() != Passing || len(o.Checks) != 8 {
		t.Fatalf("state %q, %d checks\n%s%s", o.State(), len(o.Checks), o.Build, o.Other)
	}
}

// TestGoTest_EachCheckIsReportedAsItEnds: S1.slow waits until the run
// has reported S1.fast (the report writes a file S1.slow looks for), so
// it passes only if each check reaches the caller while the others still
// run, which is what lets the watch answer a save without waiting for
// the slowest check. Every check is reported once, with its report when
// it fails.
func TestGoTest_EachCheckIsReportedAsItEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go")
	}
	g := GoTest{Root: stageModule(t, `package stage1

import (
	"os"
	"testing"
	"time"
)

func TestStage(t *testing.T) {
	t.Run("S1.fast", func(t *testing.T) {})
	t.Run("S1.fails", func(t *testing.T) { t.Error("FAIL S1.fails  on purpose") })
	t.Run("S1.slow", func(t *testing.T) {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat("reported"); err == nil {
				return
			}
		}
		t.Error("FAIL S1.slow  S1.fast was not reported while S1.slow ran")
	})
}
`)}
	var seen []string
	o, err := g.Run(context.Background(), 1, func(c CheckResult) {
		seen = append(seen, fmt.Sprintf("%s %v", c.ID, c.Passed))
		if c.ID == "S1.fails" && !strings.Contains(c.Report, "FAIL S1.fails  on purpose") {
			t.Errorf("S1.fails reported with %q", c.Report)
		}
		if c.ID == "S1.fast" {
			os.WriteFile(filepath.Join(g.Root, StageDir(1), "reported"), nil, 0o644)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "S1.fast true, S1.fails false, S1.slow true"; strings.Join(seen, ", ") != want {
		t.Errorf("reported %q, want %q", strings.Join(seen, ", "), want)
	}
	if o.FirstFailing() != "S1.fails" || len(o.Checks) != 3 {
		t.Errorf("outcome %+v", o.Checks)
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
// refuses is refused as go test would, with vet's words and no check,
// and one only vet's other analyzers find fault with runs its checks;
// the checks of a stage that builds run in its folder with SEED set. A
// runner that skipped vet, lost the compiler's message or ran the checks
// elsewhere fails.
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
	o, err := broken.Run(ctx, 1, nil)
	if err != nil || o.State() != DoesNotBuild || !strings.Contains(o.Build, "undefined: undefinedName") || strings.Contains(o.Build, "# ") {
		t.Fatalf("a stage that does not compile: %v, state %q, build %q", err, o.State(), o.Build)
	}

	vetted := GoTest{Root: stageModule(t, fmt.Sprintf(check, `fmt.Printf("%d\n", "not a number")`)), Seed: "7"}
	o, err = vetted.Run(ctx, 1, nil)
	if err != nil || o.State() != DoesNotBuild || !strings.Contains(o.Build, "Printf") || strings.Contains(o.Build, "# ") || len(o.Checks) != 0 {
		t.Fatalf("a stage vet refuses: %v, state %q, build %q, checks %+v", err, o.State(), o.Build, o.Checks)
	}
	// Unreachable code is a finding of go vet's, not of go test's: the
	// checks run, as go test ./stages/stage1 would run them.
	unreachable := GoTest{Root: stageModule(t, fmt.Sprintf(check, "return\n\t\tfmt.Println()")), Seed: "7"}
	o, err = unreachable.Run(ctx, 1, nil)
	if err != nil || o.State() != Passing || len(o.Checks) != 1 {
		t.Fatalf("a stage go test runs but go vet's unreachable finds fault with: %v, state %q, build %q, checks %+v", err, o.State(), o.Build, o.Checks)
	}
	clean := GoTest{Root: stageModule(t, fmt.Sprintf(check, "")), Seed: "7"}
	o, err = clean.Run(ctx, 1, nil)
	if err != nil || o.State() != Passing || len(o.Checks) != 1 {
		t.Fatalf("a stage that builds: %v, state %q, checks %+v\n%s", err, o.State(), o.Checks, o.Other)
	}
}

// TestEngineTags_LeavePostgresOutOnlyOnSQLite catches a watch that builds
// without PostgreSQL when the checks are to run on it, and one that links
// the driver for nothing on SQLite.
func TestEngineTags_LeavePostgresOutOnlyOnSQLite(t *testing.T) {
	t.Setenv("IDEMLAB_DATABASE_URL", "")
	if got := strings.Join(engineTags(), " "); got != "-tags=nopostgres" {
		t.Errorf("on SQLite: %q", got)
	}
	t.Setenv("IDEMLAB_DATABASE_URL", "postgres://lab@127.0.0.1:5432/lab")
	if got := engineTags(); len(got) != 0 {
		t.Errorf("on PostgreSQL: %q", got)
	}
}

// TestSummarize_TheReferenceSolutionsRunSpeaksOfTheSolution: a run of the
// reference solution's checks (lab check --solution) is run again with
// make solution-N, and sends the reader to no hint and no next stage: a
// summary that said "run make stage-8 to count the stage" (the student's
// own stage) or "make hint" fails.
func TestSummarize_TheReferenceSolutionsRunSpeaksOfTheSolution(t *testing.T) {
	passing := parseFixture(t, "stage1-passing.json")
	passing.Solution = true
	var b bytes.Buffer
	Summarize(&b, "..", passing)
	if out := b.String(); strings.Contains(out, "next:") || strings.Contains(out, "make watch") {
		t.Errorf("a passing reference is sent to the next stage:\n%s", out)
	}
	b.Reset()
	passing.Checks, passing.Only = passing.Checks[:1], passing.Checks[0].ID
	Summarize(&b, "..", passing)
	if out := b.String(); !strings.Contains(out, "run make solution-1 to count the stage") {
		t.Errorf("a RUN= run of the reference:\n%s", out)
	}
	failing := parseFixture(t, "stage1-failing.json")
	failing.Solution = true
	b.Reset()
	Summarize(&b, "..", failing)
	if out := b.String(); strings.Contains(out, "make hint") || !strings.Contains(out, "not in your code") {
		t.Errorf("a failing reference:\n%s", out)
	}
}
