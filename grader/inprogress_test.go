package grader_test

import (
	"context"
	"errors"
	"fmt"
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

// behind409 runs check id against the solution newStage builds (of
// stage n), whose retries of POST /transfers are answered 409
// request-in-progress as many times as times says (0: every time), and
// returns its error.
func behind409(t *testing.T, id string, newStage stage.Factory, n, times int) error {
	t.Helper()
	c, ok := grader.Lookup(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	subject := grader.Subject{Stage: n, Name: fmt.Sprintf("solutions/stage%d", n), New: newStage}
	return grader.RunCheck(context.Background(), subject, c, 7, retriesAnsweredBy(t, newStage, times, inProgressNow)).Err
}

// harmOf returns err's failure, and fails t unless it is one with harm.
func harmOf(t *testing.T, err error, harm judging.Harm) *judging.Failure {
	t.Helper()
	var f *judging.Failure
	if !errors.As(err, &f) {
		t.Fatalf("every retry told to wait: the check did not fail: %v", err)
	}
	if f.Harm != harm {
		t.Errorf("harm %q, want %q: %s", f.Harm, harm, f.Got)
	}
	return f
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
		id   string
		harm judging.Harm
	}{
		{"S1.sequential-retry", judging.NoUsableAnswer},
		{"S1.key-forms", judging.NoUsableAnswer},
		{"S4.insufficient-funds-replayed", judging.StuckKey},
	} {
		t.Run(tc.id+"/once", func(t *testing.T) {
			if err := behind409(t, tc.id, stage4.New, 4, 1); err != nil {
				t.Errorf("a retry told to wait once, then answered: %v", err)
			}
		})
		t.Run(tc.id+"/always", func(t *testing.T) {
			f := harmOf(t, behind409(t, tc.id, stage4.New, 4, 0), tc.harm)
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
	harmOf(t, behind409(t, "S6.outage-mid-request", stage6.New, 6, 0), judging.StuckKey)
}
