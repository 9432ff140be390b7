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
	out, err := runMutant(t, mutantNamed(t, "release-fenced-by-a-read"))
	if err != nil {
		t.Fatalf("release-fenced-by-a-read was not caught: %v\n%s", err, out)
	}
	if later := "whose takeover waits at its COMMIT (held-key-commit)"; !strings.Contains(string(out), later) {
		t.Fatalf("the failure does not show the later round (%q): the check stopped at its first finding\n%s", later, out)
	}
}

// TestLateOriginalFenced_AReleaseWhoseReadLocksTheRowPasses: a release
// that reads the owner with SELECT … FOR UPDATE and deletes the key by
// id in the same transaction is fenced (the read locks the row, and a
// retry's takeover waits for the release to commit), and
// S6.late-original-fenced passes it on PostgreSQL. Before, the round that
// holds a takeover at its COMMIT (releasedBeforeTakeoverCommits) saw no
// COMMIT within 20 s, the retry waiting for the lock, took it for a
// machine too busy, and tried again until the check ran out of time:
// could not run. The server is release-fenced-by-a-read-in-one-transaction
// with FOR UPDATE on its read, built as a mutant: the check must not
// catch it.
func TestLateOriginalFenced_AReleaseWhoseReadLocksTheRowPasses(t *testing.T) {
	if labdb.EngineOfTarget(labdb.TestTarget()) != labdb.PostgreSQL {
		t.Skip("the round runs on PostgreSQL alone, and SQLite knows no FOR UPDATE (make test-pg)")
	}
	m := mutantNamed(t, "release-fenced-by-a-read-in-one-transaction")
	m.Name = "release-read-for-update"
	m.Edits = slices.Clone(m.Edits)
	read := "WHERE id = ? AND state = 'in_progress'`"
	for j, e := range m.Edits {
		if strings.Contains(e.New, read) {
			m.Edits[j].New = strings.Replace(e.New, read, "WHERE id = ? AND state = 'in_progress' FOR UPDATE`", 1)
		}
	}
	out, _ := runMutant(t, m)
	// The built test fails when the check passes: "was not caught".
	if !strings.Contains(string(out), "was not caught by S6.late-original-fenced") {
		t.Fatalf("S6.late-original-fenced did not pass a release whose read locks the row:\n%s", out)
	}
}

// TestLateOriginalFenced_AContractDifferenceFirstThenADouble: a server
// whose late original is told to wait without Retry-After (a contract
// difference in the check's first round) and whose takeover opens a
// completed key again (a double in a later round, on PostgreSQL) is
// reported with the double: the first round records its difference and
// the check goes on. Before, the check stopped at the missing
// Retry-After, and the round that pays twice never ran. The server is
// fenced-original-no-retry-after with takeover-reopens-completed's edits,
// built as one mutant.
func TestLateOriginalFenced_AContractDifferenceFirstThenADouble(t *testing.T) {
	if labdb.EngineOfTarget(labdb.TestTarget()) != labdb.PostgreSQL {
		t.Skip("the round that pays twice runs on PostgreSQL alone (make test-pg)")
	}
	m := mutantNamed(t, "fenced-original-no-retry-after")
	m.Name = "no-retry-after-and-takeover-reopens-completed"
	m.Edits = append(slices.Clone(m.Edits), mutantNamed(t, "takeover-reopens-completed").Edits...)
	// The built test fails unless the check catches m with this harm.
	m.Harm = "double"
	if out, err := runMutant(t, m); err != nil {
		t.Fatalf("%s was not reported with the later round's double: %v\n%s", m.Name, err, out)
	}
}

// mutantNamed returns the ladder's mutant called name.
func mutantNamed(t *testing.T, name string) ladder.Mutant {
	t.Helper()
	i := slices.IndexFunc(ladder.Mutants, func(m ladder.Mutant) bool { return m.Name == name })
	if i < 0 {
		t.Fatalf("no mutant %s", name)
	}
	return ladder.Mutants[i]
}

// runMutant builds m and runs, with go test -v, the test that passes only
// if its check catches it; it returns what the run printed, and its
// error (a check that did not catch m fails the run).
func runMutant(t *testing.T, m ladder.Mutant) ([]byte, error) {
	t.Helper()
	root, seed, dir := mutantsDir(t)
	pkg, err := ladder.Build(root, dir, m, seed)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), grader.TimelinesEnv+"="+dir)
	return cmd.CombinedOutput()
}
