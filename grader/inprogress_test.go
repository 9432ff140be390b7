package grader_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
	"idemlab/solutions/stage4"
	"idemlab/solutions/stage6"
)

// inProgressNow is a 409 request-in-progress without Retry-After: the
// check comes back after the retry policy's backoff alone (up to a few
// hundred ms), not after the second a Retry-After asks for.
func inProgressNow(w http.ResponseWriter, _ *http.Request) {
	status, body := problem.Marshal(problem.New(problem.RequestInProgress, "the original is still being processed"))
	w.Header().Set("Content-Type", problem.ContentType)
	w.WriteHeader(status)
	w.Write(body)
}

// A retry told 409 request-in-progress once, as one that arrives just as
// its key completes can be, comes back as the retry policy says and is
// judged on what it is told then: the stored answer, and the check
// passes. Told so on every retry, the client stops without its answer,
// and the key table says which harm that is: the original executed and
// its row is completed (no usable answer), or the transfer was refused
// and never ran, and its key is held for good (stuck key). Before, the
// first 409 was the verdict.
func TestInProgress_ARetryToldToWaitOnceComesBack(t *testing.T) {
	for _, tc := range []struct {
		id       string
		newStage stage.Factory
		stage    int
		harm     judging.Harm
	}{
		{"S1.sequential-retry", stage4.New, 4, judging.NoUsableAnswer},
		{"S1.key-forms", stage4.New, 4, judging.NoUsableAnswer},
		{"S4.insufficient-funds-replayed", stage4.New, 4, judging.StuckKey},
	} {
		c, ok := grader.Lookup(tc.id)
		if !ok {
			t.Fatalf("no check %s", tc.id)
		}
		subject := grader.Subject{Stage: tc.stage, Name: "solutions/stage4", New: tc.newStage}
		t.Run(tc.id+"/once", func(t *testing.T) {
			if r := grader.RunCheck(context.Background(), subject, c, 7, retriesAnsweredBy(t, tc.newStage, 1, inProgressNow)); r.Err != nil {
				t.Errorf("a retry told to wait once, then answered: %v", r.Err)
			}
		})
		t.Run(tc.id+"/always", func(t *testing.T) {
			r := grader.RunCheck(context.Background(), subject, c, 7, retriesAnsweredBy(t, tc.newStage, 0, inProgressNow))
			var f *judging.Failure
			if !errors.As(r.Err, &f) {
				t.Fatalf("every retry told to wait: the check did not fail: %v", r.Err)
			}
			if f.Harm != tc.harm {
				t.Errorf("harm %q, want %q: %s", f.Harm, tc.harm, f.Got)
			}
			if !strings.Contains(f.Sent, "told to wait, it retries after") {
				t.Errorf("the story does not show the retries after the 409:\n%s", f.Sent)
			}
		})
	}
}

// S6.outage-mid-request: the original failed with the key store (503),
// and every retry, past the lease many times over, is told to wait. The
// payment never ran and cannot run: a stuck key, as
// S4.insufficient-funds-replayed judges a refused transfer's key held for
// good, not a contract difference.
func TestOutageMidRequest_EveryRetryToldToWaitIsAStuckKey(t *testing.T) {
	c, ok := grader.Lookup("S6.outage-mid-request")
	if !ok {
		t.Fatal("no check S6.outage-mid-request")
	}
	subject := grader.Subject{Stage: 6, Name: "solutions/stage6", New: stage6.New}
	r := grader.RunCheck(context.Background(), subject, c, 7, retriesAnsweredBy(t, stage6.New, 0, inProgressNow))
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		t.Fatalf("the check did not fail: %v", r.Err)
	}
	if f.Harm != judging.StuckKey {
		t.Errorf("harm %q, want %q: %s", f.Harm, judging.StuckKey, f.Got)
	}
}
