package grader_test

import (
	"context"
	"fmt"
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/grader/targets"
	"idemlab/solutions"
	"idemlab/solutions/stage0"
)

// references are the reference solutions, stage by stage.
var references = func() []grader.Subject {
	var out []grader.Subject
	for n, f := range solutions.ByStage {
		out = append(out, grader.Subject{Stage: n, Name: fmt.Sprintf("solutions/stage%d", n), New: f})
	}
	out[0].Tally = stage0.Tally
	return out
}()

// TestMain lets this test binary serve a reference solution as a child
// of itself, for the checks that crash the server.
func TestMain(m *testing.M) { gradertest.Main(m, references...) }

// TestChecks_TheReferencePassesWithEveryAmountAtItsTop runs every check
// against its stage's reference solution with every amount it draws
// (T.Amount) at the top of its range: the worst case of the draws, which
// a seed reaches sooner or later. A check whose amounts, at their tops,
// outrun what it funded fails a right server: S8.similar-references pays
// one invoice after another from an opening balance of 1,000,000 and then
// pays some of them again, and when each was of up to 100,000, at seed
// 20482 the reference solution refused a paid-again invoice for its
// funds (422), not as paid (409). Pinned, two
// amounts of one range are equal too: a check whose inputs must differ
// draws the second from the first.
//
// A check that could not run is skipped, not failed: it judged no
// server. The setting is the package's: this test does not run in
// parallel with the package's other tests, only its subtests do.
func TestChecks_TheReferencePassesWithEveryAmountAtItsTop(t *testing.T) {
	grader.AmountsAtTop(t)
	for _, c := range grader.Catalogue() {
		subject := references[c.Stage]
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			r := grader.RunCheck(context.Background(), subject, c, 1, targets.InProcess)
			switch {
			case r.Caught():
				t.Errorf("%s failed %s, every amount it drew at the top of its range:\n%s", c.ID, subject.Name, grader.Format(r, ""))
			case !r.Passed():
				// Every check runs at once here, under -race too: one that
				// could not observe what it needs on a loaded machine said
				// nothing of its amounts, and failed no server.
				t.Skipf("%s could not run: %v", c.ID, r.Err)
			}
		})
	}
}
