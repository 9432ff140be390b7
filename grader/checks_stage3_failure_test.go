package grader_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions/stage3"
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

// TestReleaseAfterFailure_ARecoveryThatToldTheTruthIsNoFinding: a server
// that runs a failed payment again by itself (as the mutant commit-retried
// does when its COMMIT fails) answers the failed attempt 201 Created, and
// its money moved once: it did no harm, and left no failed claim to give
// back. The check could not observe the release; it finds nothing against
// the server, money or contract (before, it said "a 5xx" was expected).
func TestReleaseAfterFailure_ARecoveryThatToldTheTruthIsNoFinding(t *testing.T) {
	for _, id := range []string{"S3.release-after-failure", "S1.retry-after-failure"} {
		t.Run(id, func(t *testing.T) {
			c, ok := grader.Lookup(id)
			if !ok {
				t.Fatalf("no check %s", id)
			}
			subject := grader.Subject{Stage: 3, Name: "solutions/stage3", New: stage3.New}
			r := grader.RunCheck(context.Background(), subject, c, 7, serveWrapped(t, stage3.New, runsAFailureAgain))
			var u *judging.Unobserved
			if !errors.As(r.Err, &u) {
				t.Fatalf("%v, want could not observe", r.Err)
			}
		})
	}
}

// runsAFailureAgain sends a payment answered with a 5xx through the
// server once more, and answers what that says: a server that recovers
// from a failure by itself.
func runsAFailureAgain(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/transfers" {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var rec *httptest.ResponseRecorder
		for range 2 {
			rec = httptest.NewRecorder()
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(rec, r)
			if rec.Code < 500 {
				break
			}
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}
