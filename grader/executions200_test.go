package grader_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions/stage3"
)

// executionsAnswered200 answers a transfer or deposit that executes 200
// OK instead of 201 Created, with the body and Location of the operation
// it ran; a replay (Idempotent-Replayed: true) is answered as stored.
func executionsAnswered200(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (r.URL.Path != "/transfers" && r.URL.Path != "/deposits") {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		status := rec.Code
		if status == http.StatusCreated && rec.Header().Get("Idempotent-Replayed") != "true" {
			status = http.StatusOK
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		w.Write(rec.Body.Bytes())
	})
}

// A server that answers each execution 200 OK, and is right about the
// money, differs from the contract and does no harm: a check that meets
// the 200 records it and goes on to the rounds it exists for. The report
// must carry a later round's evidence; before, S3.retry-during-original
// stopped at its first round's original ("expected the original answers
// 201 Created"), and S3.release-after-failure at its first round of
// retries at once, and neither ran the rounds that catch money bugs.
func TestExecutionAnswered200_LaterRoundsRun(t *testing.T) {
	subject := grader.Subject{Stage: 3, Name: "solutions/stage3", New: stage3.New}
	for _, tc := range []struct{ id, later string }{
		{"S3.retry-during-original", "8 times,"},
		{"S3.release-after-failure", "(round 3 of 3)"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			c, ok := grader.Lookup(tc.id)
			if !ok {
				t.Fatalf("no check %s", tc.id)
			}
			r := grader.RunCheck(context.Background(), subject, c, 1, serveWrapped(t, stage3.New, executionsAnswered200))
			var f *judging.Failure
			if !errors.As(r.Err, &f) {
				t.Fatalf("%v, want a contract difference", r.Err)
			}
			if f.Harm != "" {
				t.Errorf("harm %q, want none: the money is right", f.Harm)
			}
			if report := grader.Format(r, ""); !strings.Contains(report, tc.later) {
				t.Errorf("the report carries no evidence of a later round (%q):\n%s", tc.later, report)
			}
		})
	}
}
