package ladder

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"idemlab/kit/labdb"
)

// Mutant is a reference solution with one deliberate bug, made by a few
// small textual edits. Each bug class of the idempotency design has one,
// and the check named in CaughtBy must catch it.
type Mutant struct {
	// Name is short and names the bug, e.g. "check-then-insert".
	Name string
	// Bug says what the broken variant does, in one line.
	Bug string
	// Stage is the solution the mutant is made from.
	Stage int
	// Edits turn the solution into the mutant.
	Edits []Edit
	// CaughtBy is the ID of the check that must fail on the mutant.
	CaughtBy string
	// Lesson, if set, is the lesson section the failure must send the
	// student to (grader.Result.Lesson): the finding's own, where the
	// check's section would not explain this bug.
	Lesson string
	// Harm, if set, is the verdict on money the failure must give: a
	// judging.Harm ("stuck key"), or "none" for a contract difference
	// found while the books balanced, where a wrong harm would send the
	// student after a bug the server does not have.
	Harm string
	// Engine, if set, is the one engine the bug shows on. On the other,
	// for a reason of that engine's that the lesson names, the pattern
	// happens to hold (SQLite runs one writer at a time) or the server
	// does not start (PostgreSQL knows no type STRING), and the mutant is
	// not built there.
	Engine labdb.Engine
	// State, if set, says why the mutant keeps state in a package
	// variable (a map, a mutex, a counter), which every check's server in
	// one test process shares. Without it the ladder's tests refuse a
	// mutant that adds one: a stage's checks run side by side in one
	// process, and what one check's server left there is read by another's.
	State string
}

// Edit replaces Old, which must occur exactly once in File, with New.
type Edit struct {
	File, Old, New string
}

// DirPrefix starts the name of the folder, under the project root, where
// one run builds its mutants. Go's tools skip directories that start with
// an underscore when they expand ./..., so the mutants are never vetted,
// linted or tested by accident; each run has a folder of its own, so two
// runs in one checkout do not meet.
const DirPrefix = "_mutants-"

var packageLine = regexp.MustCompile(`(?m)^package \w+`)

// Build writes mutant m as a package of its own in dir/NAME (dir is a
// folder directly under root whose name starts with DirPrefix): the
// solution's non-test files with the edits applied, and a test that passes
// only if m.CaughtBy fails on it with evidence (and sends the student to
// m.Lesson, and judges money as m.Harm, if set). It returns the package's
// path relative to root, or an error if an edit no longer applies (the
// solution changed).
func Build(root, dir string, m Mutant, seed uint64) (string, error) {
	src := filepath.Join(root, "solutions", fmt.Sprintf("stage%d", m.Stage))
	dst := filepath.Join(dir, m.Name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(src, "*.go"))
	if err != nil {
		return "", err
	}
	applied := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		text := string(b)
		for _, e := range m.Edits {
			if filepath.Base(f) != e.File {
				continue
			}
			if n := strings.Count(text, e.Old); n != 1 {
				return "", fmt.Errorf("mutant %s: the text to replace occurs %d times in %s (want once); update the mutant", m.Name, n, f)
			}
			text = strings.Replace(text, e.Old, e.New, 1)
			applied++
		}
		text = packageLine.ReplaceAllString(text, "package mutant")
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	if applied != len(m.Edits) {
		return "", fmt.Errorf("mutant %s: %d of its %d edits found their file in solutions/stage%d", m.Name, applied, len(m.Edits), m.Stage)
	}
	// Stage 0's solution also holds the student's Tally exercise, which
	// the Tally checks run.
	tally := ""
	if m.Stage == 0 {
		tally = ", Tally: Tally"
	}
	// The mutant's name and bug are text from its file: they go into the
	// generated test as Go string literals, never as code.
	test := fmt.Sprintf(`package mutant

import (
	"cmp"
	"context"
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/grader/targets"
)

var subject = grader.Subject{Stage: %[2]d, Name: %[3]q, New: New%[10]s}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

// TestCaught passes only if check %[1]s fails on this mutant.
func TestCaught(t *testing.T) {
	c, ok := grader.Lookup(%[1]q)
	if !ok {
		t.Fatal("no check " + %[1]q)
	}
	r := grader.RunCheck(context.Background(), subject, c, %[4]d, targets.InProcess)
	switch {
	case r.Passed():
		t.Fatal(%[5]q)
	case !r.Caught():
		t.Fatalf("%%s: %%v", %[6]q, r.Err)
	case %[7]q != "" && r.Lesson() != %[7]q:
		t.Fatalf("mutant %[8]s: the failure sends the student to %%s, want %[7]s", r.Lesson())
	case %[9]q != "" && cmp.Or(string(r.Harm()), "none") != %[9]q:
		t.Fatalf("mutant %[8]s: the failure's harm is %%q, want %[9]s:\n%%s", cmp.Or(string(r.Harm()), "none"), grader.Format(r, ""))
	}
	// The evidence, for go test -v.
	t.Log("\n" + grader.Format(r, "make test (the ladder's mutants)"))
}
`, m.CaughtBy, m.Stage, "mutant "+m.Name, seed,
		fmt.Sprintf("mutant %s (%s) was not caught by %s", m.Name, m.Bug, m.CaughtBy),
		fmt.Sprintf("%s could not run on mutant %s", m.CaughtBy, m.Name), m.Lesson, m.Name, m.Harm, tally)
	if err := os.WriteFile(filepath.Join(dst, "caught_test.go"), []byte(test), 0o644); err != nil {
		return "", err
	}
	return "./" + filepath.Base(dir) + "/" + m.Name, nil
}
