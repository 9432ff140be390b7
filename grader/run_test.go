package grader_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/grader/timeline"
	sol6 "idemlab/solutions/stage6"
)

// sameOpTwice is a check that runs one operation twice on purpose, under
// two keys, and keeps books that allow it: what S5.retention-boundary
// does when a key has expired. It passes on a correct server, and leaves
// the op executed twice on it.
var sameOpTwice = grader.Check{ID: "S5.same-op-twice", Stage: 5, Run: func(t *grader.T) error {
	s, err := t.Scenario(2, 100_000)
	if err != nil {
		return err
	}
	op, from, to := t.Op(), s.A.Accounts[0], s.B.Accounts[0]
	for range 2 {
		r := t.Do(grader.Transfer(s.A, t.Key(), grader.TransferBody(from, to, 1_000, op)))
		if !r.Is(http.StatusCreated, "") {
			return t.Fail("a transfer", r.String(), "201")
		}
		s.Books.Transfer(op, from, to, 1_000)
	}
	return t.Reconcile("one op under two keys", "", s.Books)
}}

// On a server every check shares (lab grade --url), a check is judged on
// what it did itself: a check that stops before acting, because it needs
// a server it may crash, could not run, whatever the check before it left
// on the books. It is not a double of an op it never sent.
func TestRunCheck_OnASharedServerACheckIsJudgedOnItsOwnOps(t *testing.T) {
	start := serveWrapped(t, sol6.New, func(h http.Handler) http.Handler { return h })
	subject := grader.Subject{Stage: 6, Name: "a server started elsewhere", New: sol6.New}
	crash, ok := grader.Lookup("S6.crash-recovery")
	if !ok {
		t.Fatal("no check S6.crash-recovery")
	}
	if r := grader.RunCheck(context.Background(), subject, sameOpTwice, 1, start); !r.Passed() {
		t.Fatalf("%s: %v, want a pass", sameOpTwice.ID, r.Err)
	}
	r := grader.RunCheck(context.Background(), subject, crash, 1, start)
	if r.Caught() || !errors.Is(r.Err, targets.ErrNoChild) {
		t.Fatalf("%s after %s: %v (money: %q), want could not run: %v", crash.ID, sameOpTwice.ID, r.Err, r.Harm(), targets.ErrNoChild)
	}
}

// TestFormat_SaysWhatTheServerLoggedBehindItsFiveHundreds: a failure whose
// history holds the causes of 5xx answers shows each cause once, so that
// a student told 500 /problems/internal reads the database's words, and
// how many answers each was behind, so that the count adds up.
func TestFormat_SaysWhatTheServerLoggedBehindItsFiveHundreds(t *testing.T) {
	aborted := "POST /transfers → 500: hold reference: current transaction is aborted"
	r := grader.Result{Check: grader.Check{ID: "S8.x", Claim: "c", Why: "w"}, Err: &judging.Failure{Got: "500 /problems/internal"},
		History: &timeline.History{ServerErrors: []timeline.ServerError{{Line: aborted}, {Line: aborted}, {Line: "POST /transfers → 503: key store down"}}}}
	out := grader.Format(r, "make stage-8")
	want := "  server    what the server logged behind its 5xx answers (3 of them):\n            " + aborted + "  (×2)\n            POST /transfers → 503: key store down\n"
	if !strings.Contains(out, want) {
		t.Errorf("the report:\n%s\nwants:\n%s", out, want)
	}
	r.History.ServerErrors = nil
	if out := grader.Format(r, "make stage-8"); strings.Contains(out, "  server ") {
		t.Errorf("a failure without 5xx causes shows a server line:\n%s", out)
	}
}

// TestFormat_SaysWhatTheFailingOperationsRequestsGot: a check of several
// rounds (S3.release-after-failure) met 500s in the rounds before the one
// that failed; its server line lists the causes behind the answers of the
// failing operation's requests alone, and none when they got no 5xx (a
// COMMIT whose error was ignored answered 201). A line that listed the
// other rounds' 500s under a failure told 201 sent the student after a
// cause that was not this operation's.
func TestFormat_SaysWhatTheFailingOperationsRequestsGot(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	failed := "POST /transfers → 500: injected failure in the business write"
	h := &timeline.History{
		Attempts: []timeline.Attempt{
			{ID: "a1", Client: "check", Op: "op-0000000a", Start: t0, End: t0.Add(time.Millisecond), Status: 500},
			{ID: "a2", Client: "check", Op: "op-0000000a", Start: t0.Add(2 * time.Millisecond), End: t0.Add(3 * time.Millisecond), Status: 201},
			{ID: "a3", Client: "check", Op: "op-0000000b", Start: t0.Add(4 * time.Millisecond), End: t0.Add(5 * time.Millisecond), Status: 201},
		},
		ServerErrors: []timeline.ServerError{{Attempt: "a1", Op: "op-0000000a", Line: failed}},
	}
	lost := &judging.Failure{Harm: judging.Lost, Sent: `POST /transfers {"metadata":{"op":"op-0000000b"}}`, Got: "201"}
	r := grader.Result{Check: grader.Check{ID: "S3.x", Claim: "c", Why: "w"}, Err: lost, History: h}
	if out := grader.Format(r, "make stage-3"); strings.Contains(out, "  server ") {
		t.Errorf("the failing operation's requests got no 5xx, and the report lists another round's:\n%s", out)
	}
	lost.Sent = `POST /transfers {"metadata":{"op":"op-0000000a"}}`
	if out := grader.Format(r, "make stage-3"); !strings.Contains(out, "  server    what the server logged behind its 5xx answers (1 of them):\n            "+failed+"\n") {
		t.Errorf("the failing operation's own 500 is not listed:\n%s", out)
	}
}

// TestFormat_ListsTheDifferencesPastTheFirstFewByWhatWasSent: a check of
// many bad inputs (S1.invalid-key) finds a contract difference for each;
// its report shows the first few in full and lists the others by what
// was sent and what came back, each once, so that the report stays
// readable and none is left out. Differences that share their first line
// (one original, then a different retry each) are listed by their last.
func TestFormat_ListsTheDifferencesPastTheFirstFewByWhatWasSent(t *testing.T) {
	f := &judging.Failure{Sent: "bad key 0: POST /transfers", Got: "201", Expected: "400"}
	last := f
	for i := 1; i <= 6; i++ {
		last.Contract = &judging.Failure{Sent: fmt.Sprintf("bad key %d: POST /transfers\n(more)", i), Got: "201\n(body)", Expected: "400"}
		last = last.Contract
	}
	for i := 7; i <= 8; i++ {
		last.Contract = &judging.Failure{Sent: fmt.Sprintf("POST /transfers  k-1\nthen retry %d", i), Got: "409", Expected: "201"}
		last = last.Contract
	}
	out := grader.Format(grader.Result{Check: grader.Check{ID: "S1.x", Claim: "c", Why: "w"}, Err: f}, "make stage-1")
	if n := strings.Count(out, "  got       201"); n != 4 {
		t.Errorf("%d differences in full, want the finding and 3 beside it:\n%s", n, out)
	}
	want := "  contract  ✗ and 5 more, each shown by what was sent and what came back:\n" +
		"            bad key 4: POST /transfers  →  201\n            bad key 5: POST /transfers  →  201\n            bad key 6: POST /transfers  →  201\n" +
		"            then retry 7  →  409\n            then retry 8  →  409\n"
	if !strings.Contains(out, want) {
		t.Errorf("the report:\n%s\nwants:\n%s", out, want)
	}
}
