package ladder_test

import (
	"context"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
)

// TestStuckKey_TheStage6ScaffoldsUntakenLeaseIsAMoneyFinding runs
// S6.lease-takeover-once against the untouched scaffold of stage 6, which
// never takes an expired lease over: every retry is told to wait for a
// request that crashed, for good. That is a key stuck for good, a money
// finding; a check that failed it as a contract difference (as it did
// while it judged only the first burst of retries) fails this test.
func TestStuckKey_TheStage6ScaffoldsUntakenLeaseIsAMoneyFinding(t *testing.T) {
	c, _ := grader.Lookup("S6.lease-takeover-once")
	r := grader.RunCheck(context.Background(), rungs[6].Scaffold, c, 4242, targets.InProcess)
	if r.Harm() != judging.StuckKey {
		t.Fatalf("the scaffold of stage 6: harm %q, want %q; %v", r.Harm(), judging.StuckKey, r.Err)
	}
}
