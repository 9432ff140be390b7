package grader_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions"
	"idemlab/solutions/stage3"
)

// executionsAnswered200 answers a transfer or deposit that executes 200
// OK instead of 201 Created, with the body and Location of the operation
// it ran; a replay (Idempotent-Replayed: true) is answered as stored.
func executionsAnswered200(next http.Handler) http.Handler { return answered200(next, false) }

// everySuccessAnswered200 answers every transfer or deposit that succeeds
// 200 OK instead of 201 Created, a replay too: a faithful replay of a
// first answer that was not the contract's 201.
func everySuccessAnswered200(next http.Handler) http.Handler { return answered200(next, true) }

// answered200 answers 200 OK where next answers a POST /transfers or
// /deposits 201 Created, with next's headers and body: an execution, and
// a replay too when replays is set.
func answered200(next http.Handler, replays bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (r.URL.Path != "/transfers" && r.URL.Path != "/deposits") {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		status := rec.Code
		if status == http.StatusCreated && (replays || rec.Header().Get("Idempotent-Replayed") != "true") {
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

// The stage 5 and 6 checks that compare a replay with its first answer
// compare it with what the server first said. Behind executionsAnswered200
// (each execution 200 OK, its replays 201 as stored) each check goes on
// past the 200 to the round it names, and a replay of the 200 answered 201
// is a replay difference of the contract ("as it was first given"), no
// harm; before, these checks stopped at the first 200 ("expected 201
// Created"), or skipped the comparison after it. Behind
// everySuccessAnswered200 (replays 200 too, the same bytes) the replays
// are faithful: a contract difference for the 200s, no replay finding.
func TestExecutionAnswered200_ReplaysComparedWithTheFirstAnswer(t *testing.T) {
	const replayDiffers = "stored answer as it was first given (200"
	for _, tc := range []struct {
		id    string
		stage int
		seed  uint64
		later string // in the report behind executionsAnswered200
	}{
		{"S5.customers-scoped", 5, 1, "of lab time, and customer"},
		{"S5.endpoints-scoped", 5, 1, "of lab time, and the"},
		{"S5.retention-boundary", 5, 1, "with the refused transfer's key expired too"},
		{"S5.purge-bounded", 5, 3, "then the retry of one of the 9"},
		{"S5.purge-keeps-in-progress", 5, 1, ""},
		{"S6.late-original-fenced", 6, 1, ""},
	} {
		t.Run(tc.id, func(t *testing.T) {
			c, ok := grader.Lookup(tc.id)
			if !ok {
				t.Fatalf("no check %s", tc.id)
			}
			newStage := solutions.ByStage[tc.stage]
			subject := grader.Subject{Stage: tc.stage, Name: fmt.Sprintf("solutions/stage%d", tc.stage), New: newStage}
			for _, w := range []struct {
				name    string
				wrap    func(http.Handler) http.Handler
				later   []string
				missing string
			}{
				{"replays 201", executionsAnswered200, []string{tc.later, replayDiffers}, ""},
				{"replays 200", everySuccessAnswered200, nil, replayDiffers},
			} {
				r := grader.RunCheck(context.Background(), subject, c, tc.seed, serveWrapped(t, newStage, w.wrap))
				report := grader.Format(r, "")
				var f *judging.Failure
				if !errors.As(r.Err, &f) {
					t.Fatalf("%s: %v, want a contract difference", w.name, r.Err)
				}
				if f.Harm != "" {
					t.Errorf("%s: harm %q, want none: the money is right\n%s", w.name, f.Harm, report)
				}
				for _, s := range w.later {
					if s != "" && !strings.Contains(report, s) {
						t.Errorf("%s: the report does not carry %q:\n%s", w.name, s, report)
					}
				}
				if w.missing != "" && strings.Contains(report, w.missing) {
					t.Errorf("%s: a faithful replay of the 200 judged a replay difference:\n%s", w.name, report)
				}
			}
		})
	}
}
