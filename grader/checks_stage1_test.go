package grader_test

import (
	"context"
	"fmt"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/solutions"
)

// TestSameKeyEditedBody_AnswersOfStage1And2: the edited request is refused
// by stage 1's solution as a duplicate and by stage 2's as another
// request under a used key; both pass. Stage 0's server, which has no
// keys, pays the edit beside the original, and the failure is a double.
func TestSameKeyEditedBody_AnswersOfStage1And2(t *testing.T) {
	c, ok := grader.Lookup("S1.same-key-edited-body")
	if !ok {
		t.Fatal("no check S1.same-key-edited-body")
	}
	for _, tc := range []struct {
		stage int
		harm  judging.Harm
		pass  bool
	}{
		{0, judging.Double, false},
		{1, "", true},
		{2, "", true},
	} {
		subject := grader.Subject{Stage: 1, Name: fmt.Sprintf("solutions/stage%d", tc.stage), New: solutions.ByStage[tc.stage]}
		r := grader.RunCheck(context.Background(), subject, c, 1, targets.InProcess)
		if r.Passed() != tc.pass {
			t.Errorf("solution %d: passed %v, want %v: %v", tc.stage, r.Passed(), tc.pass, r.Err)
		}
		if r.Harm() != tc.harm {
			t.Errorf("solution %d: harm %q, want %q", tc.stage, r.Harm(), tc.harm)
		}
	}
}
