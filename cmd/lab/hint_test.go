package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/kit/labdb"
	"idemlab/studentloop"
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
		{2, "hint 2 of 4: 2 steps remain; ask again for the decisions"},
		{3, "hint 3 of 4: 1 step remains, and it gives the code: make the decisions first"},
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
		if named := strings.Contains(out, "\n3. The decisions: "); named != (want.tiers >= 3) {
			t.Errorf("ask %d: step 3 named the decisions %v, want %v\n%s", ask+1, named, want.tiers >= 3, out)
		}
		if shown := strings.Contains(out, "4. The code: "); shown != (want.tiers == 4) {
			t.Errorf("ask %d: the code shown %v, want %v\n%s", ask+1, shown, want.tiers == 4, out)
		}
	}
}

// TestHint_BeforeAnyRunSaysToCheckFirst: before any run on record, the
// hint names the command that records one, and says that a plain go test
// of the stage, which a student may have run, records none.
func TestHint_BeforeAnyRunSaysToCheckFirst(t *testing.T) {
	fakeLoop(t, failingS1, "")
	_, out, _ := runLabCommand(t, "hint", "1")
	if !strings.Contains(out, "make stage-1") || !strings.Contains(out, "go test keeps none") {
		t.Fatalf("%s", out)
	}
}

// TestHint_AfterARunOfSomeChecksNamesItsRUN: after make stage-1 RUN=S1
// failed, the hint says it is about the check that failed with RUN=S1,
// not "RUN=:" with the value left out.
func TestHint_AfterARunOfSomeChecksNamesItsRUN(t *testing.T) {
	some := failingS1
	some.Only = "S1"
	fakeLoop(t, some, "")
	runLabCommand(t, "check", "1", "--run", "S1")
	_, out, _ := runLabCommand(t, "hint", "1")
	if !strings.Contains(out, "hint for S1.missing-key, the check that failed when you last ran it with RUN=S1:") {
		t.Fatalf("the hint after RUN=S1 does not name it:\n%s", out)
	}
}

// couldNotRunS1 is a run of stage 1 where no check could run, for one
// reason.
var couldNotRunS1 = studentloop.Outcome{Seed: "7", Checks: []studentloop.CheckResult{
	{ID: "S0.happy-path", Report: notRunReport("S0.happy-path")},
	{ID: "S1.missing-key", Report: notRunReport("S1.missing-key")},
}}

// notRunReport is the COULD NOT RUN block of check id when the lab could
// not start the server.
func notRunReport(id string) string {
	return "COULD NOT RUN " + id + "  a claim\n  lesson    docs/lessons/01-keys.md#x\n" +
		"  why not   the lab could not start your server\n" +
		"  verdict   none: this says nothing about your server's money, either way"
}

// TestHint_NothingButChecksThatCouldNotRunGetsNoHint: when every check
// that did not pass could not run, the hint hints at no fix, since
// nothing was found against the server: it says so, and what each check
// could not observe, once for checks that could not run for one reason.
// A hint that sent the student to fix the check that could not run fails.
func TestHint_NothingButChecksThatCouldNotRunGetsNoHint(t *testing.T) {
	fakeLoop(t, couldNotRunS1, "")
	runLabCommand(t, "check", "1")
	for ask := range 2 {
		code, out, errs := runLabCommand(t, "hint", "1")
		if code != 0 || strings.Contains(out, "1. The idea") || !strings.Contains(out, "could not run") ||
			!strings.Contains(out, "S0.happy-path, S1.missing-key\n    the lab could not start your server") {
			t.Fatalf("ask %d: exit %d, want no hint but what S1.missing-key could not observe:\n%s%s", ask+1, code, out, errs)
		}
	}
	if _, out, _ := runLabCommand(t, "status"); !strings.Contains(out, "could not run: S0.happy-path") {
		t.Errorf("the status does not say S1.missing-key could not run:\n%s", out)
	}
}

// TestLoop_CommandsWorkFromAStageFolder: lab started in stages/stage1
// (go run ../../cmd/lab check 1) prints its next commands to go to the
// checkout's root first, where make finds its targets: the summary's
// hint line and the hint's last line.
func TestLoop_CommandsWorkFromAStageFolder(t *testing.T) {
	t.Setenv(labdb.EnvRootFrom, "../..")
	fakeLoop(t, failingS1, "")
	_, out, _ := runLabCommand(t, "check", "1")
	if !strings.Contains(out, "cd ../.. && make hint N=1") {
		t.Errorf("the summary from stages/stage1 does not go to the root for its hint:\n%s", out)
	}
	for range 3 {
		runLabCommand(t, "hint", "1")
	}
	if _, out, _ = runLabCommand(t, "hint", "1"); !strings.Contains(out, "cd ../.. && make diff N=1") {
		t.Errorf("the last hint from stages/stage1 does not go to the root for make diff:\n%s", out)
	}
}

// TestRootFrom: the way to the root from a folder under it, and nothing
// at the root or outside it.
func TestRootFrom(t *testing.T) {
	root := filepath.FromSlash("/home/you/idemlab")
	for _, c := range []struct{ wd, want string }{
		{root, ""},
		{filepath.Join(root, "stages", "stage3"), "../.."},
		{filepath.Join(root, "cmd"), ".."},
		{filepath.FromSlash("/home/you/other"), ""},
	} {
		if got := rootFrom(root, c.wd); got != c.want {
			t.Errorf("rootFrom(%s, %s) = %q, want %q", root, c.wd, got, c.want)
		}
	}
}

// TestHint_OnAPassingStageSpendsNoStep: after a pass, a hint has nothing
// to be about: it says so, shows no step, and counts none, so that the
// next failure's hint starts at its first step.
func TestHint_OnAPassingStageSpendsNoStep(t *testing.T) {
	root := fakeLoop(t, passingS1, "")
	runLabCommand(t, "check", "1")
	code, out, errs := runLabCommand(t, "hint", "1")
	if code != 0 || !strings.Contains(out, "nothing to hint at") || strings.Contains(out, "\n1. ") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	p, err := studentloop.LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Hints) != 0 {
		t.Errorf("hint steps counted on a passing stage: %v", p.Hints)
	}
}

// TestHint_AfterAPassAFailingRUNStillGetsItsHint: a stage that passed,
// then failed a check run alone (make stage-1 RUN=…, after an edit), is
// still passing in the progress, with that check in focus: the hint is
// about it, not "nothing to hint at".
func TestHint_AfterAPassAFailingRUNStillGetsItsHint(t *testing.T) {
	fakeLoop(t, passingS1, "")
	runLabCommand(t, "check", "1")
	some := failingS1
	some.Only = "S1"
	newRunner = func(string, string, string, bool) studentloop.Runner { return fixedRunner{some} }
	runLabCommand(t, "check", "1", "--run", "S1")
	code, out, errs := runLabCommand(t, "hint", "1")
	if code != 0 || strings.Contains(out, "nothing to hint at") || !strings.Contains(out, "S1.missing-key") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// TestHint_AnEarlierStagesCheckGetsTheHintOfTheStudentsStage: a check of
// stage 1 that fails at stage 3 is answered from stage 3's hint file when
// it has a section for that check (stage 3 moved the claim out of the
// money's transaction, and stage 1's hint would move it back), and from
// stage 1's at stage 1. The steps spent on stage 1's hint are not spent on
// stage 3's: its first ask shows its first step.
func TestHint_AnEarlierStagesCheckGetsTheHintOfTheStudentsStage(t *testing.T) {
	failing := studentloop.Outcome{Seed: "7", Checks: []studentloop.CheckResult{
		{ID: "S0.happy-path", Passed: true},
		{ID: "S1.retry-after-failure", Report: "FAIL S1.retry-after-failure  after an internal failure …"},
	}}
	fakeLoop(t, failing, "")
	runLabCommand(t, "check", "1")
	for range 3 {
		runLabCommand(t, "hint", "1")
	}
	for _, c := range []struct {
		stage     string
		want, not string
	}{
		{"3", "From this stage on the claim commits before the core call", "A request that fails before its money moves must leave its key free"},
		{"1", "4. The code", "From this stage on the claim commits before the core call"},
	} {
		runLabCommand(t, "check", c.stage)
		code, out, errs := runLabCommand(t, "hint", c.stage)
		if code != 0 || !strings.Contains(out, c.want) || strings.Contains(out, c.not) {
			t.Errorf("stage %s: exit %d, want %q and not %q\n%s%s", c.stage, code, c.want, c.not, out, errs)
		}
		if c.stage == "3" && !strings.Contains(out, "hint 1 of 4") {
			t.Errorf("stage 3: its first ask shows more than its first step, the steps of stage 1's hint counted\n%s", out)
		}
	}
}

// TestHint_FollowsTheLessonTheFailurePointsTo: a failure whose lesson line
// points to another section than its check's own (a stage 5 server that
// forgot a key inside S1.sequential-retry is sent to lesson 5's
// retention) gets the hint of the check that teaches that section, and
// says so; the check's own hint would send the student to a claim that is
// right. A section no check teaches as its own (lesson 1's on PostgreSQL)
// keeps the check's hint and says to read the section first. Before, the
// hint followed the check alone. The header names the check whose steps
// it shows first, then why (it named the failing check, and showed
// another's steps); --check gives the named check's own.
func TestHint_FollowsTheLessonTheFailurePointsTo(t *testing.T) {
	report := func(lesson string) string {
		return "FAIL S1.sequential-retry  a retry after the answer …\n  money     ✗ double: …\n  lesson    " + lesson + "\n  sent      POST /transfers …"
	}
	for _, tc := range []struct {
		name, lesson string
		want, not    []string
	}{
		{"another check's section", "docs/lessons/05-scope-retention.md#how-long-to-remember",
			[]string{"hint for S5.retention-boundary (S1.sequential-retry's failure points to its lesson section; S1.sequential-retry is the first failing check of stage 5 at its last run):",
				"S1.sequential-retry's failure points to docs/lessons/05-scope-retention.md#how-long-to-remember", "the steps below are S5.retention-boundary's", "Just inside the retention a retry is replayed"},
			[]string{"hint for S1.sequential-retry", "A retry after the answer must find the key already taken"}},
		{"a section no check has", "docs/lessons/01-claim.md#on-postgresql",
			[]string{"hint for S1.sequential-retry, the first failing check of stage 5 at its last run:", "points to docs/lessons/01-claim.md#on-postgresql", "read that first", "A retry after the answer must find the key already taken"},
			[]string{"Just inside the retention"}},
		{"the check's own", "docs/lessons/01-claim.md#a-retry-is-not-a-new-request",
			[]string{"A retry after the answer must find the key already taken"},
			[]string{"points to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeLoop(t, studentloop.Outcome{Seed: "7", Checks: []studentloop.CheckResult{
				{ID: "S0.happy-path", Passed: true},
				{ID: "S1.sequential-retry", Report: report(tc.lesson)},
			}}, "")
			runLabCommand(t, "check", "5")
			code, out, errs := runLabCommand(t, "hint", "5")
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("want no %q in\n%s", n, out)
				}
			}
			// Asked by name, the check's own hint is what it names.
			_, out, _ = runLabCommand(t, "hint", "5", "--check", "S1.sequential-retry")
			if want := "hint for S1.sequential-retry, the check you named with --check:\n\n"; !strings.HasPrefix(out, want) || strings.Contains(out, "points to") {
				t.Errorf("hint --check S1.sequential-retry: want %q first and no lesson followed\n%s", want, out)
			}
		})
	}
}
