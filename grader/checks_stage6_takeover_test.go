package grader_test

import (
	"context"
	"fmt"
	"testing"

	"idemlab/grader"
	"idemlab/grader/targets"
	"idemlab/solutions"
)

// TestTakeoverOwnKey_StageSixPassesStageFiveFails: stage 6's solution
// leaves B's expired key alone for A's retry and takes it over for B's;
// stage 5's, which takes no key over, tells B's retry to wait.
func TestTakeoverOwnKey_StageSixPassesStageFiveFails(t *testing.T) {
	c, ok := grader.Lookup("S6.takeover-own-key")
	if !ok {
		t.Fatal("no check S6.takeover-own-key")
	}
	for _, tc := range []struct {
		stage int
		pass  bool
	}{{5, false}, {6, true}} {
		subject := grader.Subject{Stage: 6, Name: fmt.Sprintf("solutions/stage%d", tc.stage), New: solutions.ByStage[tc.stage]}
		r := grader.RunCheck(context.Background(), subject, c, 1, targets.InProcess)
		if r.Passed() != tc.pass {
			t.Errorf("solution %d: passed %v, want %v: %v", tc.stage, r.Passed(), tc.pass, r.Err)
		}
	}
}
