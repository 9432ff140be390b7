package ladder_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/ladder"
	"idemlab/kit/labdb"
)

// TestLateOriginalFenced_AReleaseFencedByAReadGoesOn: a third attempt
// that executes beside the retry, once a release proven by an earlier
// read has deleted the retry's claim, moves the money once, and
// S6.late-original-fenced records it as a contract difference and goes on
// to its later rounds, as it does for a release fenced in a subquery: on
// PostgreSQL, the failure of release-fenced-by-a-read also shows the
// round that holds the retry's takeover at its COMMIT. Before, the check
// stopped at the first finding. On SQLite no round follows, and the test
// is skipped.
func TestLateOriginalFenced_AReleaseFencedByAReadGoesOn(t *testing.T) {
	if labdb.EngineOfTarget(labdb.TestTarget()) != labdb.PostgreSQL {
		t.Skip("the rounds after this one run on PostgreSQL alone (make test-pg)")
	}
	i := slices.IndexFunc(ladder.Mutants, func(m ladder.Mutant) bool { return m.Name == "release-fenced-by-a-read" })
	if i < 0 {
		t.Fatal("no mutant release-fenced-by-a-read")
	}
	root, seed, dir := mutantsDir(t)
	pkg, err := ladder.Build(root, dir, ladder.Mutants[i], seed)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), grader.TimelinesEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("release-fenced-by-a-read was not caught: %v\n%s", err, out)
	}
	if later := "whose takeover waits at its COMMIT (held-key-commit)"; !strings.Contains(string(out), later) {
		t.Fatalf("the failure does not show the later round (%q): the check stopped at its first finding\n%s", later, out)
	}
}
