package grader_test

import (
	"context"
	"errors"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions/stage4"
)

// TestReleaseAfterFailure_AFailureKeptIsAStuckKey: a retry after an
// internal failure answered with a 5xx again, nothing armed, is sent once
// more. A key that answers every retry with a failure holds the payment
// for good (a stuck key, money); a server that failed that retry once and
// ran the payment on the next has moved the money once, as asked: a
// contract difference, not money moved though refused.
func TestReleaseAfterFailure_AFailureKeptIsAStuckKey(t *testing.T) {
	c, ok := grader.Lookup("S3.release-after-failure")
	if !ok {
		t.Fatal("no check S3.release-after-failure")
	}
	subject := grader.Subject{Stage: 4, Name: "solutions/stage4", New: stage4.New}
	tests := []struct {
		name  string
		times int
		harm  judging.Harm
	}{
		{"a 500 once", 1, ""},
		{"a 500 on every retry", 0, judging.StuckKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := grader.RunCheck(context.Background(), subject, c, 7, retriesAnswered(t, tc.times, internalError))
			var f *judging.Failure
			if !errors.As(r.Err, &f) {
				t.Fatalf("the check did not fail: %v", r.Err)
			}
			if f.Harm != tc.harm {
				t.Errorf("harm %q, want %q (got %q)", f.Harm, tc.harm, f.Got)
			}
		})
	}
}
