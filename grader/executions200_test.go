package grader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/timeline"
	"idemlab/kit/stage"
	"idemlab/solutions"
	"idemlab/solutions/stage3"
	"idemlab/solutions/stage4"
	"idemlab/solutions/stage6"
	"idemlab/solutions/stage8"
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
	return payments(next, func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		status := rec.Code
		if executed(rec) || (replays && rec.Code == http.StatusCreated) {
			status = http.StatusOK
		}
		relay(w, rec, status, rec.Body.Bytes())
	})
}

// payments hands a POST of a transfer or a deposit to pay, and every
// other request to next as it is.
func payments(next http.Handler, pay http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (r.URL.Path != "/transfers" && r.URL.Path != "/deposits") {
			next.ServeHTTP(w, r)
			return
		}
		pay(w, r)
	})
}

// executed reports whether rec is the answer of an execution: a 201 that
// is no replay.
func executed(rec *httptest.ResponseRecorder) bool {
	return rec.Code == http.StatusCreated && rec.Header().Get("Idempotent-Replayed") != "true"
}

// relay answers w with rec's headers, status and body.
func relay(w http.ResponseWriter, rec *httptest.ResponseRecorder, status int, body []byte) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	w.Write(body)
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
			f, report, _ := differenceBehind(t, tc.id, subject, 1, executionsAnswered200)
			if f.Harm != "" {
				t.Errorf("harm %q, want none: the money is right", f.Harm)
			}
			if !strings.Contains(report, tc.later) {
				t.Errorf("the report carries no evidence of a later round (%q):\n%s", tc.later, report)
			}
		})
	}
}

// A server answering each execution 200 OK, its replays the stored 201,
// and right about the money: each check records every 200 and the
// replays that differ from it, and goes on. The report must hold at
// least n differences whose text holds evidence, each from a round the
// check reached only past the first 200; before, each of them stopped at
// its first execution ("201 Created: the first request with a fresh key
// executes"), or, for S1.retry-after-failure, at the first payment whose
// retry was answered 200 while its original failed. Stage 2's replays in
// another status are one difference a round, which names the first of
// them and how many retries were answered so (before, one per retry).
func TestExecutionAnswered200_EveryRoundRuns(t *testing.T) {
	for _, tc := range []struct {
		id       string
		stage    int
		new      stage.Factory
		evidence string
		n        int
	}{
		// Stage 4 on, a retry gets the stored answer: each original's
		// retry after the edits, and each respelled retry.
		{"S2.edited-resubmission", 4, stage4.New, "4 of the 4 retries sent were replayed in another status", 1},
		{"S2.equivalent-bodies", 4, stage4.New, "retries sent were replayed in another status", 1},
		// Every one of the nine bodies is sent, and the key table read.
		{"S2.fingerprint-is-rfc8785", 3, stage3.New, "the first request with a fresh key executes", 9},
		// The payments whose retry is sent while the original fails.
		{"S1.retry-after-failure", 3, stage3.New, "the original failed and moved nothing, so the retry executes", 2},
	} {
		t.Run(tc.id, func(t *testing.T) {
			subject := grader.Subject{Stage: tc.stage, Name: fmt.Sprintf("solutions/stage%d", tc.stage), New: tc.new}
			f, report, _ := differenceBehind(t, tc.id, subject, 1, executionsAnswered200)
			n, replays := 0, 0
			for d := f; d != nil; d = d.Contract {
				if strings.Contains(d.Expected, "a replay is that answer again") {
					replays++
				}
				if d.Harm != "" {
					t.Errorf("harm %q, want none: the money is right\n%s", d.Harm, report)
				}
				if strings.Contains(d.Sent+d.Got+d.Expected, tc.evidence) {
					n++
				}
			}
			if n < tc.n {
				t.Errorf("%d differences say %q, want %d or more: the check did not reach its later rounds\n%s", n, tc.evidence, tc.n, report)
			}
			if strings.Contains(tc.evidence, "replayed in another status") && replays != 1 {
				t.Errorf("the replays in another status are %d differences, want one:\n%s", replays, report)
			}
		})
	}
}

// A round of stage 2 that stops before its last retry counts, among the
// retries replayed in another status, only the retries it sent: the
// server answers each execution 200 OK, replays the stored 201, and fails
// the second replay with a 500, which ends S2.equivalent-bodies there.
// Before, the difference said "1 of the N retries", N the retries the
// round would have sent.
func TestExecutionAnswered200_ARoundStoppedEarlyCountsTheRetriesSent(t *testing.T) {
	var mu sync.Mutex
	replays := 0
	wrap := func(next http.Handler) http.Handler {
		return payments(next, func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			status := rec.Code
			if executed(rec) {
				status = http.StatusOK
			}
			if rec.Header().Get("Idempotent-Replayed") == "true" {
				mu.Lock()
				replays++
				if replays == 2 {
					status = http.StatusInternalServerError
				}
				mu.Unlock()
			}
			relay(w, rec, status, rec.Body.Bytes())
		})
	}
	subject := grader.Subject{Stage: 4, Name: "solutions/stage4", New: stage4.New}
	_, report, _ := differenceBehind(t, "S2.equivalent-bodies", subject, 1, wrap)
	if want := "(1 of the 2 retries sent was replayed in another status"; !strings.Contains(report, want) {
		t.Errorf("the report does not say %q:\n%s", want, report)
	}
}

// recoversByItself runs a transfer or deposit that fails with a 5xx once
// more, as a server that retries its own transaction once the fault is
// spent, and answers that second run.
func recoversByItself(next http.Handler) http.Handler {
	return payments(next, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := httptest.NewRecorder()
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(rec, r)
		if rec.Code >= 500 {
			rec = httptest.NewRecorder()
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(rec, r)
		}
		relay(w, rec, rec.Code, rec.Body.Bytes())
	})
}

// A failed attempt answered 200 OK, by a server that ran it again by
// itself and moved the money once, is the server that recovered by
// itself that a 201 is: the release could not be observed, the 200 is a
// contract difference, and no harm. Before, S3.release-after-failure
// failed it at its first round: "a 5xx: the business write failed".
func TestExecutionAnswered200_AFailedAttemptRecoveredByItself(t *testing.T) {
	subject := grader.Subject{Stage: 3, Name: "solutions/stage3", New: stage3.New}
	wrap := func(h http.Handler) http.Handler { return executionsAnswered200(recoversByItself(h)) }
	f, report, _ := differenceBehind(t, "S3.release-after-failure", subject, 1, wrap)
	if f.Harm != "" {
		t.Fatalf("harm %q, want none: the money moved once\n%s", f.Harm, report)
	}
	if !strings.Contains(report, "recovered from the failure by itself") {
		t.Errorf("the report does not say the server recovered by itself:\n%s", report)
	}
}

// executionsNamingNoID answers a transfer or deposit that executes 201
// Created, its Location kept, with a body without its id.
func executionsNamingNoID(next http.Handler) http.Handler {
	return payments(next, func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var v map[string]any
		if executed(rec) && json.Unmarshal(body, &v) == nil {
			delete(v, "id")
			body, _ = json.Marshal(v)
		}
		relay(w, rec, rec.Code, body)
	})
}

// An invoice paid with a 201 whose body names no transfer, its money
// moved once: a contract difference, and S8.similar-references goes on
// to every similar number and to the invoices paid again, whose
// refusals name the transfer the first answer's Location named. Before,
// the first invoice's payment (payInvoice) failed the check.
func TestExecutionNamingNoID_SimilarReferencesRun(t *testing.T) {
	subject := grader.Subject{Stage: 8, Name: "solutions/stage8", New: stage8.New}
	f, report, _ := differenceBehind(t, "S8.similar-references", subject, 1, executionsNamingNoID)
	n := 0
	for d := f; d != nil; d = d.Contract {
		if d.Harm != "" {
			t.Errorf("harm %q, want none: the money is right\n%s", d.Harm, report)
		}
		if strings.Contains(d.Sent, "another invoice, its number") && strings.Contains(d.Expected, "its id in the body") {
			n++
		}
		if strings.HasPrefix(d.Expected, "409 ") {
			t.Errorf("an invoice paid again judged against no transfer or another:\n%s", report)
		}
	}
	if n < 10 {
		t.Errorf("%d similar numbers recorded paid without an id in the body, want 10 or more\n%s", n, report)
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
			subject := grader.Subject{Stage: tc.stage, Name: fmt.Sprintf("solutions/stage%d", tc.stage), New: solutions.ByStage[tc.stage]}
			for _, w := range []struct {
				name    string
				wrap    func(http.Handler) http.Handler
				later   []string
				missing string
			}{
				{"replays 201", executionsAnswered200, []string{tc.later, replayDiffers}, ""},
				{"replays 200", everySuccessAnswered200, nil, replayDiffers},
			} {
				f, report, _ := differenceBehind(t, tc.id, subject, tc.seed, w.wrap)
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

// The stage 8 checks that paid an invoice and stopped at the 200 (the
// é-precomposed invoice of S8.equal-looking-reference, the retry of
// S8.reference-write-fails) record it and go on: the invoice paid again,
// under a new key, is sent and refused 409 duplicate-reference, which
// the history of the check's requests shows. Before, neither sent it.
// Behind executionsNamingNoID (a 201 whose body names no transfer),
// S8.reference-write-fails goes on the same way; before, it failed there.
func TestExecutionAnswered200_Stage8PaysTheInvoiceAgain(t *testing.T) {
	subject := grader.Subject{Stage: 8, Name: "solutions/stage8", New: stage8.New}
	for _, tc := range []struct {
		id   string
		wrap func(http.Handler) http.Handler
	}{
		{"S8.equal-looking-reference", executionsAnswered200},
		{"S8.reference-write-fails", executionsAnswered200},
		{"S8.reference-write-fails", executionsNamingNoID},
	} {
		t.Run(tc.id, func(t *testing.T) {
			f, report, r := differenceBehind(t, tc.id, subject, 1, tc.wrap)
			if f.Harm != "" {
				t.Errorf("harm %q, want none: the money is right", f.Harm)
			}
			if r.History == nil || !slices.ContainsFunc(r.History.Attempts, func(a timeline.Attempt) bool {
				return a.Status == http.StatusConflict && strings.Contains(a.Problem, "duplicate-reference")
			}) {
				t.Errorf("no payment of the invoice again was refused duplicate-reference: the check stopped before it\n%s", report)
			}
		})
	}
}

// replaysAnsweredOtherwise is executionsAnswered200 whose replays tell
// another balance than the execution did (replaysRewritten): a wrong
// answer to every client that retries.
func replaysAnsweredOtherwise(next http.Handler) http.Handler {
	return executionsAnswered200(replaysRewritten(func(v map[string]any) {
		if b, ok := v["balance_after"].(float64); ok {
			v["balance_after"] = b + 1
		}
	})(next))
}

// A retry that took a late original's key over and was told its payment
// ran in 200 OK is still the answer every later retry must be given:
// S8.late-original and S6.late-original-fenced (its round whose retry
// answered before the original woke) compare the last retry with what
// the retry was told, and a replay telling another balance is the wrong
// answer it is. Before, both stopped judging at the retry's 200 (a
// contract difference only).
func TestExecutionAnswered200_TheLastRetryIsComparedWithWhatTheRetryWasTold(t *testing.T) {
	for _, subject := range []grader.Subject{
		{Stage: 8, Name: "solutions/stage8", New: stage8.New},
		{Stage: 6, Name: "solutions/stage6", New: stage6.New},
	} {
		id := map[int]string{8: "S8.late-original", 6: "S6.late-original-fenced"}[subject.Stage]
		t.Run(id, func(t *testing.T) {
			f, report, _ := differenceBehind(t, id, subject, 1, replaysAnsweredOtherwise)
			if f.Harm != judging.WrongAnswer {
				t.Fatalf("harm %q, want a wrong answer: the last retry told another balance than the retry\n%s", f.Harm, report)
			}
		})
	}
}

// differenceBehind runs check id, with seed, against subject's stage
// served behind wrap, and returns its failure, which must be one (a
// contract difference, or a money finding the caller judges), its report
// and its result.
func differenceBehind(t *testing.T, id string, subject grader.Subject, seed uint64, wrap func(http.Handler) http.Handler) (*judging.Failure, string, grader.Result) {
	t.Helper()
	c, ok := grader.Lookup(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	r := grader.RunCheck(context.Background(), subject, c, seed, serveWrapped(t, subject.New, wrap))
	report := grader.Format(r, "")
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		t.Fatalf("%v, want a contract difference\n%s", r.Err, report)
	}
	return f, report, r
}
