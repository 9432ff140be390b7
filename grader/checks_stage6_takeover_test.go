package grader_test

import "testing"

// TestTakeoverOwnKey_StageSixPassesStageFiveFails: stage 6's solution
// leaves B's expired key alone for A's retry and takes it over for B's;
// stage 5's, which takes no key over, tells B's retry to wait.
func TestTakeoverOwnKey_StageSixPassesStageFiveFails(t *testing.T) {
	for _, tc := range []struct {
		stage int
		pass  bool
	}{{5, false}, {6, true}} {
		r := onSolution(t, "S6.takeover-own-key", tc.stage)
		if r.Passed() != tc.pass {
			t.Errorf("solution %d: passed %v, want %v: %v", tc.stage, r.Passed(), tc.pass, r.Err)
		}
	}
}
