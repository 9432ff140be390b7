package grader_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
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

// refusalToldToWait answers every retry of a transfer refused for its
// funds (422 insufficient-funds) 409 request-in-progress, and, when
// inProgress, shows that key's rows in progress in GET /lab/state: a
// server that keeps a refused request's key, as the check's last round
// (refusalNotStuck) looks for.
func refusalToldToWait(t *testing.T, inProgress bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		var mu sync.Mutex
		refused := map[string]bool{}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Idempotency-Key")
			mu.Lock()
			retry := refused[key]
			mu.Unlock()
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/transfers" && retry:
				inProgressNow(w, r)
				return
			case r.Method == http.MethodPost && r.URL.Path == "/transfers":
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				if rec.Code == http.StatusUnprocessableEntity && strings.Contains(rec.Body.String(), problem.InsufficientFunds.URI()) {
					mu.Lock()
					refused[key] = true
					mu.Unlock()
				}
				maps.Copy(w.Header(), rec.Header())
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			case r.Method == http.MethodGet && r.URL.Path == "/lab/state" && inProgress:
				stateWithKeys(t, next, w, r, func(rows []any) []any {
					mu.Lock()
					defer mu.Unlock()
					for _, row := range rows {
						if m, ok := row.(map[string]any); ok && refused[fmt.Sprint(m["key"])] {
							m["state"] = judging.StateInProgress
						}
					}
					return rows
				})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// TestReleaseAfterFailure_ARefusalToldToWaitIsJudgedByTheKeyTable: the
// check's last round sends a transfer its account cannot pay (422), then
// retries it; a server that tells every retry to wait has harmed the
// refused request's client, and the key table says how: a key still in
// progress is held for good (stuck key), a key completed (stage 4 stores
// the refusal) or gone (stage 3 releases it) leaves a client that never
// learns it was refused (no usable answer). A check that skipped the
// round passes these servers; one that judged the 409 alone gives one
// harm to all three.
func TestReleaseAfterFailure_ARefusalToldToWaitIsJudgedByTheKeyTable(t *testing.T) {
	c, ok := grader.Lookup("S3.release-after-failure")
	if !ok {
		t.Fatal("no check S3.release-after-failure")
	}
	for _, tc := range []struct {
		name       string
		n          int
		new        stage.Factory
		inProgress bool
		harm       judging.Harm
		got        string
	}{
		{"stage 4, the key left in progress", 4, stage4.New, true, judging.StuckKey, "state: in_progress"},
		{"stage 4, the refusal stored", 4, stage4.New, false, judging.NoUsableAnswer, "state: completed"},
		{"stage 3, the claim released", 3, stage3.New, false, judging.NoUsableAnswer, "no row of the key in idempotency_keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subject := grader.Subject{Stage: tc.n, Name: fmt.Sprintf("solutions/stage%d", tc.n), New: tc.new}
			r := grader.RunCheck(context.Background(), subject, c, 7, serveWrapped(t, tc.new, refusalToldToWait(t, tc.inProgress)))
			var f *judging.Failure
			if !errors.As(r.Err, &f) {
				t.Fatalf("every retry of a refused transfer told to wait: %v, want a failure", r.Err)
			}
			if f.Harm != tc.harm || !strings.Contains(f.Got, tc.got) || !strings.Contains(f.Expected, "422 "+problem.InsufficientFunds.URI()+" again") {
				t.Errorf("harm %q, want %q; got %q, want it to show %q; expected %q", f.Harm, tc.harm, f.Got, tc.got, f.Expected)
			}
		})
	}
}
