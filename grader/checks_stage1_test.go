package grader_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/solutions"
)

// onSolution runs check id once (run seed 1, in this process) against
// stage n's reference solution, graded at the check's own stage.
func onSolution(t *testing.T, id string, n int) grader.Result {
	t.Helper()
	c, ok := grader.Lookup(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	subject := grader.Subject{Stage: c.Stage, Name: fmt.Sprintf("solutions/stage%d", n), New: solutions.ByStage[n]}
	return grader.RunCheck(context.Background(), subject, c, 1, targets.InProcess)
}

// errorOf runs check id once (run seed 1, in this process) against
// subject, graded at subject's stage, and returns what it found: nil if
// it passed.
func errorOf(t *testing.T, id string, subject grader.Subject) error {
	t.Helper()
	c, ok := grader.Lookup(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	return grader.RunCheck(context.Background(), subject, c, 1, targets.InProcess).Err
}

// failureOf runs check id as errorOf does and returns its failure; it
// fails t at once when the check did not fail.
func failureOf(t *testing.T, id string, subject grader.Subject) *judging.Failure {
	t.Helper()
	err := errorOf(t, id, subject)
	var f *judging.Failure
	if !errors.As(err, &f) {
		t.Fatalf("%s against %s: %v, want a failure", id, subject.Name, err)
	}
	return f
}

// TestSameKeyEditedBody_AnswersOfStage1And2: the edited request is refused
// by stage 1's solution as a duplicate and by stage 2's as another
// request under a used key; both pass. Stage 0's server, which has no
// keys, pays the edit beside the original, and the failure is a double.
func TestSameKeyEditedBody_AnswersOfStage1And2(t *testing.T) {
	for _, tc := range []struct {
		stage int
		harm  judging.Harm
		pass  bool
	}{
		{0, judging.Double, false},
		{1, "", true},
		{2, "", true},
	} {
		r := onSolution(t, "S1.same-key-edited-body", tc.stage)
		if r.Passed() != tc.pass {
			t.Errorf("solution %d: passed %v, want %v: %v", tc.stage, r.Passed(), tc.pass, r.Err)
		}
		if r.Harm() != tc.harm {
			t.Errorf("solution %d: harm %q, want %q", tc.stage, r.Harm(), tc.harm)
		}
	}
}
