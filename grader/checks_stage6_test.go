package grader

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"idemlab/grader/judging"
	"idemlab/grader/replay"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
)

// S6.lease-takeover-once counts a payment's core calls from the moment
// its original is held: an original seen in progress but not yet on the
// core would call it after the count began, and a correct server's one
// takeover would read as two. Only an original whose call is counted is
// held.
func TestHeldOnCore(t *testing.T) {
	inProgress := []map[string]any{{"rowid": int64(1), "key": "k-1", "state": "in_progress"}}
	tests := []struct {
		name string
		st   labctl.State
		want bool
	}{
		{"in progress, its core call counted", labctl.State{Keys: inProgress, CoreCalls: map[string]int64{"op-1": 1}}, true},
		{"in progress, between its claim and its core call", labctl.State{Keys: inProgress, CoreCalls: map[string]int64{}}, false},
		{"in progress, another op's core call counted", labctl.State{Keys: inProgress, CoreCalls: map[string]int64{"op-2": 1}}, false},
		{"a core call, no key in progress", labctl.State{CoreCalls: map[string]int64{"op-1": 1}}, false},
	}
	for _, tc := range tests {
		if got := heldOnCore(tc.st, "k-1", "op-1"); got != tc.want {
			t.Errorf("%s: heldOnCore = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// S6.late-original-fenced judges a round only when the retry took the
// key over. A retry that came after the original had completed replays
// its 201, and on a busy machine that replay can be answered before the
// check sees the original's answer: the round observed nothing, and a
// completion that checks no lease owner must not pass for it. Its books,
// reconciled first, held: a finding that leaves every client told the
// truth about its money (a third attempt that executed once the retry's
// claim was deleted, a 409 without Retry-After) is a contract difference
// the check records and goes on from, to its later rounds; one that tells
// a client of money that did not move, or leaves the retry that holds the
// lease without its result, ends it.
func TestLateOriginalVerdict(t *testing.T) {
	created := func(id string) Response {
		return Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"` + id + `"}`)}
	}
	// Told it ran in 200 OK, its body naming the op: a contract
	// difference the caller records, judged as a 201 here.
	ok := func(id string) Response {
		return Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"` + id + `","metadata":{"op":"op-1"}}`)}
	}
	inProgress := Response{Status: http.StatusConflict, Header: http.Header{"Content-Type": {problem.ContentType}, "Retry-After": {"1"}}, Body: []byte(`{"type":"` + pInProgress + `"}`)}
	noRetryAfter := Response{Status: http.StatusConflict, Header: http.Header{"Content-Type": {problem.ContentType}}, Body: []byte(`{"type":"` + pInProgress + `"}`)}
	plain := Response{Status: http.StatusConflict, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("in progress")}
	duplicate := Response{Status: http.StatusConflict, Header: http.Header{"Content-Type": {problem.ContentType}}, Body: []byte(`{"type":"` + problem.DuplicateRequest.URI() + `"}`)}
	tests := []struct {
		name                  string
		first, third, second  Response
		tookOver              bool
		conclusive, wantsFail bool
		differs               int
	}{
		{"the retry replays the original, answered before the check looked", created("t-1"), created("t-1"), created("t-1"), false, false, false, 0},
		{"the retry replays the original, answered after", created("t-1"), created("t-1"), created("t-1"), true, false, false, 0},
		{"the retry answered 409 before the original woke up", created("t-1"), created("t-1"), inProgress, false, true, false, 0},
		{"the retry took over and finished before the original's answer was seen", inProgress, inProgress, created("t-2"), false, false, false, 0},
		{"fenced: the original refused, the retry executes", inProgress, inProgress, created("t-2"), true, true, false, 0},
		{"unfenced: both told they ran, two results for one payment", created("t-1"), inProgress, created("t-2"), true, true, true, 0},
		{"unfenced: the original completes, the retry's work thrown away", created("t-1"), created("t-1"), inProgress, true, true, false, 2},
		{"released without owner: the third attempt executes afresh, the retry's work thrown away", inProgress, created("t-3"), inProgress, true, true, false, 2},
		{"released without owner, and the original told to wait without Retry-After", noRetryAfter, created("t-3"), inProgress, true, true, false, 3},
		{"the third attempt and the retry told two results for one payment", inProgress, created("t-3"), created("t-2"), true, true, true, 0},
		{"the retry that took over does not execute, nor anyone", inProgress, inProgress, inProgress, true, true, true, 0},
		{"fenced, but the original told it is a duplicate", duplicate, inProgress, created("t-2"), true, true, true, 0},
		{"fenced, but the original told to wait without Retry-After", noRetryAfter, inProgress, created("t-2"), true, true, false, 1},
		{"fenced, but the original told to wait in a plain-text 409", plain, inProgress, created("t-2"), true, true, false, 1},
		{"fenced, the retry told it ran in 200", inProgress, inProgress, ok("t-2"), true, true, false, 0},
		{"the retry replays the original told it ran in 200", ok("t-1"), created("t-1"), created("t-1"), true, false, false, 0},
		{"unfenced: both complete, the original told in 200", ok("t-1"), inProgress, ok("t-2"), true, true, true, 0},
	}
	for _, tc := range tests {
		conclusive, want, differs := lateOriginalVerdict("op-1", tc.first, tc.third, tc.second, tc.tookOver)
		if conclusive != tc.conclusive || (want != "") != tc.wantsFail || len(differs) != tc.differs {
			t.Errorf("%s: conclusive %v, want %q, differences %q; expected conclusive %v, a failure %v, %d differences", tc.name, conclusive, want, differs, tc.conclusive, tc.wantsFail, tc.differs)
		}
	}
}

// S6.day-replay-through-faults judges an invalid day money first: a day
// whose counts show a money finding fails as that harm, the worst of
// them, and only a day of contract differences alone is one. It catches
// a check that fails every invalid day without a harm, whose report then
// says of a day with a key stuck for good that no operation ran more
// often than asked, a contract difference.
func TestDayFailureMoneyFirst(t *testing.T) {
	day := func(edit func(c *replay.DayCounts)) replay.DayReconciliation {
		rc := replay.DayReconciliation{Ops: 3, Money: replay.DayMoney{Conserved: true}}
		edit(&rc.Counts)
		return rc
	}
	tests := []struct {
		name string
		rc   replay.DayReconciliation
		want judging.Harm
	}{
		{"a key stuck in progress", day(func(c *replay.DayCounts) { c.StuckInProgress, c.StuckNeverExecuted = 1, 1 }), judging.StuckKey},
		{"a stuck key beside an unexpected answer", day(func(c *replay.DayCounts) { c.StuckInProgress, c.UnexpectedStatus = 1, 1 }), judging.StuckKey},
		{"no usable answer before a stuck key", day(func(c *replay.DayCounts) { c.StuckInProgress, c.NoUsableAnswer = 1, 1 }), judging.NoUsableAnswer},
		{"a wrong answer before no usable answer", day(func(c *replay.DayCounts) { c.NoUsableAnswer, c.WrongAnswers = 1, 1 }), judging.WrongAnswer},
		{"told duplicate, never ran", day(func(c *replay.DayCounts) { c.ToldDuplicate = 1 }), judging.ToldDuplicate},
		{"a lost operation before a wrong answer", day(func(c *replay.DayCounts) { c.WrongAnswers, c.LostTransfers = 1, 1 }), judging.Lost},
		{"a double before a lost operation", day(func(c *replay.DayCounts) { c.LostTransfers, c.DoubleApplied = 1, 1 }), judging.Double},
		{"an invoice paid twice", day(func(c *replay.DayCounts) { c.InvoicesPaidTwice = 1 }), judging.Double},
		{"a balance off", day(func(c *replay.DayCounts) { c.BalanceMismatches = 1 }), judging.Unbalanced},
		{"money not conserved", replay.DayReconciliation{}, judging.Unbalanced},
		{"a settings change lost", day(func(c *replay.DayCounts) { c.LostUpdates = 1 }), judging.LostUpdate},
		{"a transfer not posted", day(func(c *replay.DayCounts) { c.NotPosted = 1 }), judging.NotPosted},
		{"answers the contract does not allow, alone", day(func(c *replay.DayCounts) { c.UnexpectedStatus, c.MismatchedReplays, c.EditsNotServed = 2, 1, 1 }), ""},
	}
	for _, tc := range tests {
		err := newT().dayFailure(tc.rc, "a day", "all of them")
		var f *judging.Failure
		if !errors.As(err, &f) {
			t.Fatalf("%s: %v, want a failure", tc.name, err)
		}
		if f.Harm != tc.want {
			t.Errorf("%s: harm %q, want %q\n%s", tc.name, f.Harm, tc.want, f.Got)
		}
	}
	// A client told in progress until it gave up, its key not in the
	// lab's key table: whether the key is stuck as well cannot be seen,
	// but the client never learned its result: no usable answer, before
	// any contract difference; beside a worse money finding, that one.
	for _, tc := range []struct {
		name string
		c    func(*replay.DayCounts)
		want judging.Harm
	}{
		{"a key not observed", func(c *replay.DayCounts) { c.KeyUnobserved, c.UnexpectedStatus = 1, 1 }, judging.NoUsableAnswer},
		{"a key not observed beside a wrong answer", func(c *replay.DayCounts) { c.KeyUnobserved, c.WrongAnswers = 1, 1 }, judging.WrongAnswer},
	} {
		var f *judging.Failure
		if err := newT().dayFailure(day(tc.c), "a day", "all of them"); !errors.As(err, &f) || f.Harm != tc.want {
			t.Errorf("%s: %v, want harm %q", tc.name, err, tc.want)
		}
	}
	f := newT().dayFailure(day(func(c *replay.DayCounts) { c.StuckInProgress, c.StuckNeverExecuted = 1, 1 }), "a day", "all of them").(*judging.Failure)
	f.Reconciled = true
	out := Format(Result{Check: Check{ID: "S6.day-replay-through-faults"}, Err: f}, "again")
	if !strings.Contains(out, "  money     ✗ stuck key: ") || strings.Contains(out, "a contract difference") {
		t.Errorf("the report of a day with a key stuck for good:\n%s\nwants its money line to name the stuck key, never a contract difference", out)
	}
}

// A failing day counts in results.json every operation its worst harm's
// findings name, each once: the day's operations (op-010) are not named
// as a check's are, and a day with three doubles was counted one.
func TestDayFailure_CountsEveryOperationOfItsHarm(t *testing.T) {
	rc := replay.DayReconciliation{Ops: 150, Money: replay.DayMoney{Conserved: true},
		Counts: replay.DayCounts{DoubleApplied: 2, InvoicesPaidTwice: 2, LostTransfers: 1},
		Findings: []replay.DayFinding{
			{Kind: "lost_transfers", Op: "op-004"},
			{Kind: "double_applied", Op: "op-010"},
			{Kind: "double_applied", Op: "op-122"},
			{Kind: "invoices_paid_twice", Op: "op-010"},
			{Kind: "invoices_paid_twice", Op: "op-057"},
			{Kind: "balance_mismatches", Account: "acc_a"},
		}}
	err := newT().dayFailure(rc, "a day", "all of them")
	got, cerr := CountFindings([]Result{{Check: Check{ID: "S6.day-replay-through-faults"}, Err: err}})
	if cerr != nil {
		t.Fatal(cerr)
	}
	if want := (Counts{DoubleApplied: 3}); got != want {
		t.Errorf("CountFindings of the day = %+v, want %+v", got, want)
	}
}
