package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/kit/labdb"
)

// A lesson prints what a failing check printed, so that a student can
// compare it with what their own run prints. When a check's claim is
// reworded or the lab's reproduce line changes, the pasted block goes
// stale without anyone noticing (the title of S5.customers-scoped did).
// Every FAIL (or COULD NOT RUN) line in a fenced block of a lesson,
// English or Japanese (or of the README, a stage's README or another
// page of docs/), must name a check of the catalogue with its
// current claim ("…" in the lesson stands for text left out), its lesson
// and why lines what the lab prints for that check today (the
// catalogue's, or a lesson section or why the grader gives a failure of
// its in their stead), and the block's reproduce line, when it has one,
// must be the command the lab prints for that check: make stage-N (or
// make solution-N) for a stage that runs it, with a seed and RUN= the
// same check. What was sent and what came back change with the seed and
// the check's draws, and only a run tells whether they still hold.
func TestLessons_FailureBlocksMatchTheCatalogue(t *testing.T) {
	checks := map[string]grader.Check{}
	for _, c := range grader.Catalogue() {
		checks[c.ID] = c
	}
	var paths []string
	for _, pattern := range []string{"docs/lessons/*.md", jaLessons + "/*.md", "docs/*.md", "README.md", "stages/*/README.md"} {
		found, err := filepath.Glob(filepath.Join(repoRoot, filepath.FromSlash(pattern)))
		if err != nil || len(found) == 0 {
			t.Fatalf("no text matches %s (%v)", pattern, err)
		}
		paths = append(paths, found...)
	}
	blocks := 0
	for _, path := range paths {
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range splitFences(string(md)).blocks {
			problems, ok := failureBlockProblems(b.text, checks)
			if ok {
				blocks++
			}
			for _, p := range problems {
				t.Errorf("%s: %s", filepath.ToSlash(strings.TrimPrefix(path, repoRoot+string(filepath.Separator))), p)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no failure block found: has the FAIL line's form changed?")
	}
}

// TestFailureBlockProblems feeds failureBlockProblems blocks a lesson
// could hold, fresh and stale.
func TestFailureBlockProblems(t *testing.T) {
	checks := map[string]grader.Check{"S5.x": {ID: "S5.x", Stage: 5, Claim: "two customers, at once or one after the other, get their own transfers",
		Lesson: "docs/lessons/05-scope-retention.md#whose-key", Why: "keys are chosen by clients, and two clients can choose alike"}}
	tests := []struct {
		name, block string
		problems    int
	}{
		{"fresh", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  money     ✓ …\n  reproduce make stage-5 SEED=4242 RUN=S5.x\n", 0},
		{"a later stage, on PostgreSQL", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  reproduce scripts/pg-cluster.sh make stage-7 SEED=1 RUN=S5.x\n", 0},
		{"the solution", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  reproduce make solution-5 SEED=1 RUN=S5.x\n", 0},
		{"elided", "FAIL S5.x  two customers, … get their own …\n", 0},
		{"a claim reworded since", "FAIL S5.x  two customers get their own transfers\n  reproduce make stage-5 SEED=4242 RUN=S5.x\n", 1},
		{"elided, but reworded", "FAIL S5.x  two clients … get their own …\n", 1},
		{"a check that does not exist", "FAIL S5.y  two customers, at once or one after the other, get their own transfers\n", 1},
		{"another check's reproduce", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  reproduce make stage-5 SEED=4242 RUN=S5.z\n", 1},
		{"a stage before the check's", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  reproduce make stage-4 SEED=4242 RUN=S5.x\n", 1},
		{"a command the lab does not print", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  reproduce go run ./cmd/lab check 5 --seed 4242 --run S5.x\n", 1},
		{"two reproduce lines, one failure", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  reproduce make stage-5 SEED=4242 RUN=S5.x\n  reproduce make stage-5 SEED=4242 RUN=S5.x\n", 1},
		{"its lesson and why", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  lesson    docs/lessons/05-scope-retention.md#whose-key\n  why       keys are chosen by clients, and two clients can choose alike\n", 0},
		{"its why, elided", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  why       keys are chosen by clients, …\n", 0},
		{"a why reworded since", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  why       keys are chosen by clients\n", 1},
		{"a lesson section moved since", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  lesson    docs/lessons/05-scope-retention.md#scopes\n", 1},
		{"a lesson section the grader gives a failure instead", "FAIL S5.x  two customers, at once or one after the other, get their own transfers\n  lesson    docs/lessons/02-fingerprint.md#on-postgresql\n", 0},
		{"not a failure block", "make stage-5 RUN=S5.x\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			problems, _ := failureBlockProblems(tc.block, checks)
			if len(problems) != tc.problems {
				t.Errorf("%d problems %q; want %d", len(problems), problems, tc.problems)
			}
		})
	}
}

var (
	failLine      = regexp.MustCompile(`(?m)^(?:FAIL|COULD NOT RUN) (\S+)  (.*)$`)
	reproduceLine = regexp.MustCompile(`(?m)^ +reproduce (.*)$`)
	whyLine       = regexp.MustCompile(`(?m)^ +why {7}(.*)$`)
	lessonLine    = regexp.MustCompile(`(?m)^ +lesson {4}(.*)$`)
	madeCommand   = regexp.MustCompile(`^make (?:stage|solution)-(\d+) SEED=(\d+) RUN=(\S+)$`)
)

// failureBlockProblems checks a fenced block that holds a failure as the
// lab prints it; ok reports whether it holds one.
func failureBlockProblems(block string, checks map[string]grader.Check) (problems []string, ok bool) {
	fails := failLine.FindAllStringSubmatch(block, -1)
	if len(fails) == 0 {
		return nil, false
	}
	if len(fails) > 1 {
		return []string{fmt.Sprintf("one block holds %d failures; show one at a time", len(fails))}, true
	}
	id, claim := fails[0][1], strings.TrimSpace(fails[0][2])
	c, found := checks[id]
	if !found {
		return []string{fmt.Sprintf("%s is in no catalogue", id)}, true
	}
	if !elidedMatch(claim, c.Claim) {
		problems = append(problems, fmt.Sprintf("%s's claim is now\n\t%s\nnot, as the text shows it,\n\t%s\n(paste a fresh run)", id, c.Claim, claim))
	}
	for _, w := range whyLine.FindAllStringSubmatch(block, -1) {
		why := strings.TrimSpace(w[1])
		if !elidedMatch(why, c.Why) && !saidInstead(why, graderSays().whys) {
			problems = append(problems, fmt.Sprintf("%s's why is now\n\t%s\nnot, as the text shows it,\n\t%s\n(paste a fresh run)", id, c.Why, why))
		}
	}
	for _, l := range lessonLine.FindAllStringSubmatch(block, -1) {
		lesson := strings.TrimSpace(l[1])
		if lesson != c.Lesson && !saidInstead(lesson, graderSays().lessons) {
			problems = append(problems, fmt.Sprintf("%s's lesson is now %s, not, as the text shows it, %s (paste a fresh run)", id, c.Lesson, lesson))
		}
	}
	repros := reproduceLine.FindAllStringSubmatch(block, -1)
	if len(repros) > 1 {
		problems = append(problems, fmt.Sprintf("%s's block has %d reproduce lines", id, len(repros)))
	}
	for _, r := range repros {
		if p := reproduceProblem(strings.TrimSpace(r[1]), c); p != "" {
			problems = append(problems, p)
		}
	}
	return problems, true
}

// elidedMatch reports whether claim, where "…" stands for text left out,
// is want.
func elidedMatch(claim, want string) bool {
	parts := strings.Split(claim, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(want)
}

// reproduceProblem says what is wrong with a lesson's reproduce line for
// check c: it must be what gradertest.Reproduce prints for a stage that
// runs c (scripts/pg-cluster.sh in front, or not).
func reproduceProblem(line string, c grader.Check) string {
	cmd := strings.TrimPrefix(line, "scripts/pg-cluster.sh ")
	m := madeCommand.FindStringSubmatch(cmd)
	if m == nil {
		return fmt.Sprintf("%s: the lab prints no reproduce line of the form %q", c.ID, line)
	}
	stage, _ := strconv.Atoi(m[1])
	seed, err := strconv.ParseUint(m[2], 10, 64)
	if err != nil {
		return fmt.Sprintf("%s: reproduce line %q: %v", c.ID, line, err)
	}
	if m[3] != c.ID {
		return fmt.Sprintf("%s's block reproduces %s", c.ID, m[3])
	}
	if stage < c.Stage {
		return fmt.Sprintf("%s: reproduce line %q names stage %d, which does not run this stage-%d check", c.ID, line, stage, c.Stage)
	}
	name := fmt.Sprintf("stages/stage%d", stage)
	if strings.HasPrefix(cmd, "make solution-") {
		name = fmt.Sprintf("solutions/stage%d", stage)
	}
	printed := strings.TrimPrefix(gradertest.Reproduce(grader.Subject{Stage: stage, Name: name}, seed, c.ID), labdb.AgainPrefix())
	if printed != cmd {
		return fmt.Sprintf("%s: the lab prints %q, not %q", c.ID, printed, cmd)
	}
	return ""
}
