package ladder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"idemlab/grader"
	"idemlab/grader/ladder"
	"idemlab/grader/targets"
	"idemlab/kit/labdb"
	"idemlab/kit/stage"
	"idemlab/solutions"
	sol0 "idemlab/solutions/stage0"
	stg0 "idemlab/stages/stage0"
	stg1 "idemlab/stages/stage1"
	stg2 "idemlab/stages/stage2"
	stg3 "idemlab/stages/stage3"
	stg4 "idemlab/stages/stage4"
	stg5 "idemlab/stages/stage5"
	stg6 "idemlab/stages/stage6"
	stg7 "idemlab/stages/stage7"
	stg8 "idemlab/stages/stage8"
	stg9 "idemlab/stages/stage9"
)

var rungs = []ladder.Rung{
	{Stage: 0,
		Solution: grader.Subject{Stage: 0, Name: "solutions/stage0", New: sol0.New, Tally: sol0.Tally},
		Scaffold: grader.Subject{Stage: 0, Name: "stages/stage0", New: stg0.New, Tally: stg0.Tally}},
	rung(1, stg1.New),
	rung(2, stg2.New),
	rung(3, stg3.New),
	rung(4, stg4.New),
	rung(5, stg5.New),
	rung(6, stg6.New),
	rung(7, stg7.New),
	rung(8, stg8.New),
	rung(9, stg9.New),
}

// rung is stage n's rung: the reference solution and the scaffold.
func rung(n int, scaffold stage.Factory) ladder.Rung {
	return ladder.Rung{Stage: n,
		Solution: grader.Subject{Stage: n, Name: fmt.Sprintf("solutions/stage%d", n), New: solutions.ByStage[n]},
		Scaffold: grader.Subject{Stage: n, Name: fmt.Sprintf("stages/stage%d", n), New: scaffold}}
}

// TestMain lets this test binary serve any rung's subject as a child
// process, for the checks that crash the server. Once the tests have run
// it lists, last, the first line of each thing that did not hold: the
// ladder's output is long, and its end is what a CI log shows.
func TestMain(m *testing.M) {
	var subjects []grader.Subject
	for _, r := range rungs {
		subjects = append(subjects, r.Solution, r.Scaffold)
	}
	if targets.IsChild() {
		os.Exit(targets.ServeChild(subjects...))
	}
	targets.CanServe(subjects...)
	code := m.Run()
	if len(failed.lines) > 0 {
		fmt.Printf("\nWhat did not hold (%d):\n", len(failed.lines))
		for _, l := range failed.lines {
			fmt.Println("  " + l)
		}
	}
	os.Exit(code)
}

// failed gathers the first line of each error the ladder's tests report.
var failed struct {
	sync.Mutex
	lines []string
}

// errorf reports an error on t, as t.Errorf does, and gathers its first
// line, under t's name, for TestMain's list.
func errorf(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	first, _, _ := strings.Cut(msg, "\n")
	if r := []rune(first); len(r) > 240 {
		first = string(r[:240]) + "…"
	}
	failed.Lock()
	failed.lines = append(failed.lines, t.Name()+": "+first)
	failed.Unlock()
	t.Error(msg)
}

// TestLadder runs the matrix (every solution, scaffold and mutant against
// the checks) and prints it.
func TestLadder(t *testing.T) {
	ctx := context.Background()
	seed, err := grader.RunSeed()
	if err != nil {
		t.Fatal(err)
	}
	// run runs checks against subject; a check that could not run at all
	// proves nothing, whichever way the cell must go, and is an error.
	run := func(t *testing.T, subject grader.Subject, checks []grader.Check) ladder.Cell {
		c := ladder.Run(ctx, subject, checks, seed)
		for _, id := range c.Broken {
			errorf(t, "%s: %s could not run:\n%s", subject.Name, id, c.Errors[id])
		}
		return c
	}
	// guards are the declared guards of the rungs that ran: stage-N checks
	// that solution N-1 passes by design (grader.Check.Guard).
	var guards []grader.Check
	rows := [][]string{{"stage", "solution N, checks <= N", "solution N-1, stage-N checks", "scaffold N, stage-N checks", "scaffold N, checks < N"}}
	for i, r := range rungs {
		n := r.Stage
		// A subtest a stage, so that -run 'TestLadder/stage7$' runs one
		// rung: its row alone is printed.
		t.Run(fmt.Sprintf("stage%d", n), func(t *testing.T) {
			rows = append(rows, climb(t, i, run, &guards))
		})
	}
	fmt.Printf("\nThe stage ladder (seed %d):\n", seed)
	ladder.PrintMatrix(os.Stdout, rows)
	if len(guards) > 0 {
		fmt.Println("guards, the stage-N checks that solution N-1 passes by design:")
		ladder.PrintGuards(os.Stdout, guards)
	}
}

// climb runs the rung rungs[i] through run, reports on t what does not
// hold, adds its declared guards, and returns its row of the matrix.
func climb(t *testing.T, i int, run func(*testing.T, grader.Subject, []grader.Check) ladder.Cell, guards *[]grader.Check) []string {
	r := rungs[i]
	n := r.Stage
	row := []string{fmt.Sprint(n)}
	if len(ladder.OfStage(r.Solution)) == 0 {
		errorf(t, "stage %d has no checks", n)
		return append(row, "no checks", "-", "-", "-")
	}

	sol := run(t, r.Solution, grader.For(r.Solution))
	row = append(row, verdict(sol, true))
	for _, id := range sol.Failed {
		errorf(t, "solution %d must pass %s:\n%s", n, id, sol.Errors[id])
	}

	if i == 0 {
		row = append(row, "-")
	} else {
		prev := rungs[i-1].Solution
		prev.Stage = n
		checks := ladder.OfStage(prev)
		below := run(t, prev, checks)
		row = append(row, verdict(below, false))
		if len(below.Failed) == 0 {
			errorf(t, "solution %d passes every stage-%d check: the stage teaches nothing a check can see", n-1, n)
		}
		for _, m := range ladder.CompareGuards(checks, below) {
			errorf(t, "%s", m)
		}
		*guards = append(*guards, ladder.Guards(checks)...)
	}

	scaf := run(t, r.Scaffold, ladder.OfStage(r.Scaffold))
	row = append(row, verdict(scaf, false))
	if len(scaf.Failed) == 0 {
		errorf(t, "stages/stage%d passes every stage-%d check. The ladder holds the untouched scaffolds: "+
			"if you have solved the stage, that is why (well done); your own check is make stage-%d", n, n, n)
	}
	earlier := run(t, r.Scaffold, ladder.Before(r.Scaffold))
	for _, id := range earlier.Failed {
		errorf(t, "the scaffold of stage %d must pass the earlier check %s:\n%s", n, id, earlier.Errors[id])
	}
	return append(row, verdict(earlier, true))
}

// verdict renders a cell: for a subject that must pass, "pass (k)" or the
// failures; for one that must fail, how many checks caught it.
func verdict(c ladder.Cell, mustPass bool) string {
	if len(c.Checks) == 0 {
		return "-"
	}
	if len(c.Broken) > 0 {
		return "COULD NOT RUN " + strings.Join(c.Broken, ",")
	}
	if mustPass {
		if len(c.Failed) == 0 {
			return fmt.Sprintf("pass (%d)", len(c.Checks))
		}
		return "FAILED " + strings.Join(c.Failed, ",")
	}
	if len(c.Failed) == 0 {
		return "NOT CAUGHT"
	}
	return fmt.Sprintf("fails %d/%d", len(c.Failed), len(c.Checks))
}

// TestMutants builds the mutants and runs the check that must catch each,
// a subtest for each stage's mutants (-run 'TestMutants/stage7$' builds
// only those, the mutants of mutants/stage7: see mutantsByStage); it
// prints the mutant table of the stages it ran.
func TestMutants(t *testing.T) {
	if len(ladder.Mutants) == 0 {
		t.Fatal("no mutants")
	}
	root, seed, dir := mutantsDir(t)
	// The engine the mutants run on: PostgreSQL when make test-pg names a
	// cluster, else SQLite.
	engine := labdb.EngineOfTarget(labdb.TestTarget())
	byStage := mutantsByStage(ladder.Mutants)
	rows := [][]string{{"mutant", "bug", "caught by", "result"}}
	for _, n := range slices.Sorted(maps.Keys(byStage)) {
		t.Run(fmt.Sprintf("stage%d", n), func(t *testing.T) {
			rows = append(rows, runMutants(t, root, dir, seed, engine, byStage[n])...)
		})
	}
	if len(rows) > 1 {
		fmt.Printf("\nMutants on %s (seed %d): each must be caught by its check\n", engine, seed)
		ladder.PrintMatrix(os.Stdout, rows)
	}
}

// mutantsDir returns the checkout's root, the run's seed, and a folder
// under the root for mutants to be built in (ladder.Build), removed when
// t ends.
func mutantsDir(t *testing.T) (root string, seed uint64, dir string) {
	t.Helper()
	root, err := targets.Root()
	if err != nil {
		t.Fatal(err)
	}
	seed, err = grader.RunSeed()
	if err != nil {
		t.Fatal(err)
	}
	dir, err = os.MkdirTemp(root, ladder.DirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return root, seed, dir
}

// mutantsByStage groups mutants by the stage of the check that must
// catch each, as their folders do (mutants/stageN): a subtest runs every
// mutant its stage's checks catch, whichever solution each is made from.
func mutantsByStage(ms []ladder.Mutant) map[int][]ladder.Mutant {
	by := map[int][]ladder.Mutant{}
	for _, m := range ms {
		c, _ := grader.Lookup(m.CaughtBy)
		by[c.Stage] = append(by[c.Stage], m)
	}
	return by
}

// TestMutantsByStage_FollowsTheFolders: TestMutants/stageN builds the
// mutants of mutants/stageN, the ones stage N's checks catch, even those
// made from a later stage's solution.
func TestMutantsByStage_FollowsTheFolders(t *testing.T) {
	by := mutantsByStage(ladder.Mutants)
	names := func(ms []ladder.Mutant) []string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s (made from solution %d)", m.Name, m.Stage))
		}
		return out
	}
	for n := 0; n <= 9; n++ {
		folder, err := ladder.LoadMutants(os.DirFS("."), fmt.Sprintf("mutants/stage%d", n))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := names(by[n]), names(folder); !slices.Equal(got, want) {
			errorf(t, "TestMutants/stage%d builds %v, want the mutants of mutants/stage%d: %v", n, got, n, want)
		}
	}
}

// runMutants builds mutants in dir and runs, in one go test, the check
// that must catch each, failing t for each one not caught. It returns
// their rows of the mutant table; a mutant whose bug does not show on
// engine is not built, and its row says so.
func runMutants(t *testing.T, root, dir string, seed uint64, engine labdb.Engine, mutants []ladder.Mutant) [][]string {
	var pkgs []string
	for _, m := range mutants {
		if m.Engine != "" && m.Engine != engine {
			continue
		}
		if _, ok := grader.Lookup(m.CaughtBy); !ok {
			errorf(t, "mutant %s names no check: %s", m.Name, m.CaughtBy)
			continue
		}
		pkg, err := ladder.Build(root, dir, m, seed)
		if err != nil {
			errorf(t, "%v", err)
			continue
		}
		pkgs = append(pkgs, pkg)
	}
	outcome, logs := map[string]string{}, map[string]*strings.Builder{}
	if len(pkgs) > 0 {
		cmd := exec.Command("go", append([]string{"test", "-count=1", "-json"}, pkgs...)...)
		cmd.Dir = root
		// The mutants' failures draw their timelines here, not in the
		// checkout's .idemlab.
		cmd.Env = append(os.Environ(), grader.TimelinesEnv+"="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Run()
		dec := json.NewDecoder(&out)
		for dec.More() {
			var ev struct{ Action, Package, Test, Output string }
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("go test -json output: %v\n%s", err, out.String())
			}
			if logs[ev.Package] == nil {
				logs[ev.Package] = &strings.Builder{}
			}
			logs[ev.Package].WriteString(ev.Output)
			if ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail") {
				outcome[ev.Package] = ev.Action
			}
		}
	}
	var rows [][]string
	for _, m := range mutants {
		if m.Engine != "" && m.Engine != engine {
			rows = append(rows, []string{m.Name, m.Bug, m.CaughtBy, notBuiltOn(m, engine)})
			continue
		}
		pkg := "idemlab/" + filepath.Base(dir) + "/" + m.Name
		res := "caught"
		if outcome[pkg] != "pass" {
			res = "NOT CAUGHT"
			log := ""
			if logs[pkg] != nil {
				log = logs[pkg].String()
			}
			errorf(t, "mutant %s (%s) was not caught by %s:\n%s", m.Name, m.Bug, m.CaughtBy, log)
		}
		rows = append(rows, []string{m.Name, m.Bug, m.CaughtBy, res})
	}
	return rows
}

// notBuiltOn is the result of mutant m on engine, where its bug does not
// show and it is not built. It names the engine the bug shows on and
// claims nothing of engine: there the pattern may hold (one writer at a
// time on SQLite), or the server may not start at all (PostgreSQL knows no
// type STRING), and the mutant's lesson says which.
func notBuiltOn(m ladder.Mutant, engine labdb.Engine) string {
	return fmt.Sprintf("not built on %s: the bug shows on %s alone (its lesson says why)", engine, m.Engine)
}

// TestNotBuiltOn_ClaimsNothingOfTheOtherEngine catches a row that says
// a mutant not built on an engine holds there: reference-string-column,
// whose column PostgreSQL refuses to create, does not hold on PostgreSQL,
// its server does not start.
func TestNotBuiltOn_ClaimsNothingOfTheOtherEngine(t *testing.T) {
	i := slices.IndexFunc(ladder.Mutants, func(m ladder.Mutant) bool { return m.Name == "reference-string-column" })
	if i < 0 {
		t.Fatal("no mutant reference-string-column")
	}
	got := notBuiltOn(ladder.Mutants[i], labdb.PostgreSQL)
	if want := "not built on postgres: the bug shows on sqlite alone (its lesson says why)"; got != want {
		t.Errorf("reference-string-column on postgres: %q, want %q", got, want)
	}
}

// TestScaffoldsMirrorSolutions holds the promise of the stage READMEs: a
// scaffold and its solution have the same non-test files, and the same
// stage test, so copying the solution's .go files over the scaffold makes
// make stage-N pass (the ladder shows that solution N passes).
func TestScaffoldsMirrorSolutions(t *testing.T) {
	root, err := targets.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rungs {
		sol := filepath.Join(root, r.Solution.Name)
		scaf := filepath.Join(root, r.Scaffold.Name)
		if got, want := goFiles(t, scaf), goFiles(t, sol); !slices.Equal(got, want) {
			errorf(t, "stage %d: %s has %v, %s has %v", r.Stage, r.Scaffold.Name, got, r.Solution.Name, want)
		}
		a, err := os.ReadFile(filepath.Join(sol, "stage_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(scaf, "stage_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.ReplaceAll(string(a), r.Solution.Name, r.Scaffold.Name) != string(b) {
			errorf(t, "stage %d: the scaffold's stage_test.go is not the solution's with the path changed", r.Stage)
		}
	}
}

// goFiles lists the non-test Go files of dir.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, n)
		}
	}
	return out
}
