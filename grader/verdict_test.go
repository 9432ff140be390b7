package grader

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"idemlab/grader/judging"
	"idemlab/grader/timeline"
)

// newT is a T with nothing to send to: enough for a verdict.
func newT() *T { return &T{differences: &[]*judging.Failure{}} }

// contracts lists the contract differences f carries beside it.
func contracts(f *judging.Failure) []string {
	var out []string
	for c := f.Contract; c != nil; c = c.Contract {
		out = append(out, c.Got)
	}
	return out
}

// A check that passed after recording contract differences fails with
// the first, and carries every other beside it: none is dropped.
func TestWithDifferences_PassedCheckFailsWithEveryDifference(t *testing.T) {
	tt := newT()
	tt.Differ("a", "first", "x")
	tt.Differ("b", "second", "y")
	tt.Differ("c", "third", "z")
	var f *judging.Failure
	if !errors.As(tt.withDifferences(nil), &f) || f.Got != "first" || f.Harm != "" {
		t.Fatalf("got %v, want the first difference as a contract failure", f)
	}
	if got := contracts(f); strings.Join(got, ",") != "second,third" {
		t.Fatalf("beside it: %v, want second, third", got)
	}
}

// A money finding stays the failure; the differences met before it are
// listed after it, and Format prints the money verdict first.
func TestWithDifferences_MoneyFirst(t *testing.T) {
	tt := newT()
	tt.Differ("a", "a plain 409", "409 request-in-progress")
	tt.Differ("b", "a 422", "201")
	err := tt.withDifferences(tt.Harmful(judging.Leak, "copy", "another's transfer", "403"))
	var f *judging.Failure
	if !errors.As(err, &f) || f.Harm != judging.Leak {
		t.Fatalf("got %v, want the leak", err)
	}
	if got := contracts(f); strings.Join(got, ",") != "a plain 409,a 422" {
		t.Fatalf("beside it: %v", got)
	}
	out := Format(Result{Check: Check{ID: "S5.x"}, Err: err}, "again")
	money := strings.Index(out, "money     ✗ "+string(judging.Leak))
	beside := strings.Index(out, "contract  ✗ also, beside the money finding")
	if money < 0 || beside < money || strings.Count(out, "contract  ✗") != 2 {
		t.Fatalf("the report does not put the money first and both differences after it:\n%s", out)
	}
}

// A check that could not go on after a contract difference still reports
// the difference, and says where it stopped.
func TestWithDifferences_CouldNotGoOnKeepsTheEvidence(t *testing.T) {
	tt := newT()
	tt.Differ("a", "a 500", "201")
	var f *judging.Failure
	if !errors.As(tt.withDifferences(tt.CouldNotObserve("the key table")), &f) || !strings.Contains(f.Got, "could not go on: could not observe the key table") {
		t.Fatalf("got %+v", f)
	}
}

// note keeps a contract difference and lets the check go on; a money
// finding, or an error, it gives back.
func TestNote_ContractGoesOnMoneyStops(t *testing.T) {
	tt := newT()
	if err := tt.note(tt.Fail("a", "b", "c")); err != nil || len(*tt.differences) != 1 {
		t.Fatalf("a contract difference: %v, %d kept", err, len(*tt.differences))
	}
	if err := tt.note(tt.Harmful(judging.Double, "a", "b", "c")); err == nil {
		t.Fatal("a double was kept as a contract difference")
	}
}

// created is a 201 naming id, marked as a replay or not.
func created(id string, marked bool) Response {
	h := http.Header{"Content-Type": {"application/json"}}
	if marked {
		h.Set("Idempotent-Replayed", "true")
	}
	return Response{Status: http.StatusCreated, Header: h, Body: []byte(`{"id":"` + id + `"}`)}
}

// The operations answers tell of are counted by the ids they name, never
// by the replay marker: a faithful replay without it is the same
// operation, a 201 naming another id is another one.
func TestExecutedOps_CountsOperationsNotMarkers(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   []Response
		want int
	}{
		{"a first answer and its marked replay", []Response{created("tr_1", false), created("tr_1", true)}, 1},
		{"a first answer and its replay without the marker", []Response{created("tr_1", false), created("tr_1", false)}, 1},
		{"two transfers, the second marked as a replay", []Response{created("tr_1", false), created("tr_2", true)}, 2},
		{"refusals only", []Response{{Status: http.StatusConflict, Header: http.Header{}}}, 0},
	} {
		if got := executedOps(tc.rs...); got != tc.want {
			t.Errorf("%s: %d operations, want %d", tc.name, got, tc.want)
		}
	}
	if !sameOp(created("tr_1", false), created("tr_1", false)) || sameOp(created("tr_1", false), created("tr_2", true)) {
		t.Error("sameOp judges by the marker, not by the operation")
	}
}

// TestAbortedTransaction_SendsTheStudentToThePostgreSQLSection: a 5xx
// whose logged cause is PostgreSQL refusing a statement after a failed
// one (25P02) points at the section that explains it, stage 1's before
// the savepoint is taught and stage 2's from then on; other causes keep
// the check's section.
func TestAbortedTransaction_SendsTheStudentToThePostgreSQLSection(t *testing.T) {
	aborted := "POST /transfers → 503: ERROR: current transaction is aborted, commands ignored until end of transaction block (SQLSTATE 25P02)"
	if !abortedTransaction([]timeline.ServerError{{Line: "POST /transfers → 500: disk full"}, {Line: aborted}}) {
		t.Errorf("25P02 among the causes is not seen")
	}
	if abortedTransaction([]timeline.ServerError{{Line: "POST /transfers → 500: disk full"}}) {
		t.Errorf("a cause without 25P02 is taken for an aborted transaction")
	}
	for stage, want := range map[int]string{1: lesson1 + "#on-postgresql", 2: lesson2 + "#on-postgresql", 6: lesson2 + "#on-postgresql"} {
		if got := postgresLesson(stage); got != want {
			t.Errorf("stage %d: %s, want %s", stage, got, want)
		}
	}
	c := Check{ID: "S1.x", Lesson: lesson1 + "#a-retry-is-not-a-new-request"}
	if got := (Result{Check: c, Err: &judging.Failure{}}).Lesson(); got != c.Lesson {
		t.Errorf("a finding without a lesson of its own: %s, want the check's %s", got, c.Lesson)
	}
	if got := (Result{Check: c, Err: &judging.Failure{Lesson: lesson2 + "#on-postgresql"}}).Lesson(); got != lesson2+"#on-postgresql" {
		t.Errorf("a finding with a lesson of its own: %s, want it", got)
	}
}

// TestValueTooLong_SeesPostgreSQLRefuseALongAnswer: a 5xx whose logged
// cause is PostgreSQL refusing a value longer than its column (22001), as
// varchar-answer-column's completion of a long answer is, is seen; an
// aborted transaction or another cause is not taken for it.
func TestValueTooLong_SeesPostgreSQLRefuseALongAnswer(t *testing.T) {
	tooLong := "POST /transfers → 503: ERROR: value too long for type character varying(4096) (SQLSTATE 22001)"
	if !valueTooLong([]timeline.ServerError{{Line: "POST /transfers → 500: disk full"}, {Line: tooLong}}) {
		t.Errorf("22001 among the causes is not seen")
	}
	aborted := "POST /transfers → 503: ERROR: current transaction is aborted, commands ignored until end of transaction block (SQLSTATE 25P02)"
	if valueTooLong([]timeline.ServerError{{Line: aborted}, {Line: "POST /transfers → 500: disk full"}}) {
		t.Errorf("a cause without 22001 is taken for a value too long")
	}
}

// TestKeyForgotten_SendsTheStudentToTheRetention: a purge with no
// condition on the time forgets a key between a stage 4 check's original
// and its retry (purge-without-time fails S4.replay-byte-identical first in
// a full run of stage 5), and the retry that ran again is sent to lesson
// 05's retention, not to the section on storing the answer, and told why
// in its terms. The key of an operation that ran once, or a key only
// completed, is no such finding, nor is one forgotten in a check of stage 5
// on, or on a server that keeps its keys.
func TestKeyForgotten_SendsTheStudentToTheRetention(t *testing.T) {
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	h := timeline.History{
		Attempts: []timeline.Attempt{{ID: "a1", Key: "k-1", Op: "op-1"}, {ID: "a2", Key: "k-1", Op: "op-1"},
			{ID: "a3", Key: "k-2", Op: "op-2"}},
		Events: []timeline.Event{
			{At: at, Kind: timeline.Execution, Op: "op-1", Count: 1},
			{At: at, Kind: timeline.Claim, Key: "k-1", Detail: "completed"},
			{At: at, Kind: timeline.Complete, Key: "k-1"},
			{At: at.Add(time.Millisecond), Kind: timeline.Execution, Op: "op-1", Count: 2},
			{At: at, Kind: timeline.Claim, Key: "k-2", Detail: "completed"},
		},
	}
	if keyForgotten(h, []string{"op-1"}) {
		t.Error("a key only claimed and completed is taken for forgotten")
	}
	for _, forgot := range []timeline.Event{
		{At: at.Add(2 * time.Millisecond), Kind: timeline.Forget, Key: "k-1"},
		{At: at, Kind: timeline.Claim, Key: "k-1", Detail: "in_progress, again, in the completed key's row"},
	} {
		h := h
		h.Events = append(slices.Clone(h.Events), forgot)
		if !keyForgotten(h, []string{"op-1"}) {
			t.Errorf("%s %q of the doubled operation's key is not seen", forgot.Kind, forgot.Detail)
		}
		if keyForgotten(h, []string{"op-2"}) {
			t.Errorf("%s of another operation's key is taken for the doubled one's", forgot.Kind)
		}
	}
	h.Events = append(h.Events, timeline.Event{At: at, Kind: timeline.Forget, Key: "k-1"})
	for _, tc := range []struct {
		name           string
		check, subject int
		f              judging.Failure
		lesson, why    string
	}{
		{"a stage 4 check on a stage 5 server", 4, 5, judging.Failure{Excess: []string{"op-1"}},
			lesson5 + "#how-long-to-remember", forgottenWhy},
		{"on a stage 9 server", 1, 9, judging.Failure{Excess: []string{"op-1"}}, lesson5 + "#how-long-to-remember", forgottenWhy},
		{"a why of the finding's own", 4, 6, judging.Failure{Excess: []string{"op-1"}, Why: "w"}, lesson5 + "#how-long-to-remember", "w"},
		{"a stage 5 check, which moves the clock past retentions", 5, 5, judging.Failure{Excess: []string{"op-1"}}, "", ""},
		{"a stage 4 server, which keeps its keys", 4, 4, judging.Failure{Excess: []string{"op-1"}}, "", ""},
		{"a lesson of the finding's own", 4, 5, judging.Failure{Excess: []string{"op-1"}, Lesson: "l"}, "l", ""},
		{"no operation ran more often than asked", 4, 5, judging.Failure{}, "", ""},
	} {
		f := tc.f
		explainForgotten(&f, tc.check, tc.subject, h)
		if f.Lesson != tc.lesson || f.Why != tc.why {
			t.Errorf("%s: lesson %q and why %q, want %q and %q", tc.name, f.Lesson, f.Why, tc.lesson, tc.why)
		}
	}
}

// Once a lease check has recorded a retry taken while the lease was live,
// a contract difference a later probe finds follows it: the retry taken
// early leads the failure. A money finding still leads, and without a
// retry taken early the later failure is the check's own, as it was.
func TestEarlyFirst_TheRetryTakenEarlyLeads(t *testing.T) {
	tt := newT()
	tt.Differ("the retry", "201", "409 request-in-progress")
	var f *judging.Failure
	if !errors.As(tt.withDifferences(tt.earlyFirst(true, tt.Fail("two processes", "the core called 2 times", "one call"))), &f) || f.Got != "201" {
		t.Fatalf("got %+v, want the retry taken early first", f)
	}
	if got := contracts(f); strings.Join(got, ",") != "the core called 2 times" {
		t.Fatalf("beside it: %v", got)
	}

	tt = newT()
	tt.Differ("the retry", "201", "409 request-in-progress")
	if !errors.As(tt.withDifferences(tt.earlyFirst(true, tt.Harmful(judging.Double, "retries", "paid again", "once"))), &f) || f.Harm != judging.Double {
		t.Fatalf("got %+v, want the double first", f)
	}

	tt = newT()
	if !errors.As(tt.withDifferences(tt.earlyFirst(false, tt.Fail("two processes", "the core called 2 times", "one call"))), &f) || f.Got != "the core called 2 times" {
		t.Fatalf("got %+v, want the check's own failure", f)
	}
}
