package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/judging"
	"idemlab/grader/replay"
	"idemlab/grader/scoreboard"
	"idemlab/kit/bank"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
	sol0 "idemlab/solutions/stage0"
	sol1 "idemlab/solutions/stage1"
	sol5 "idemlab/solutions/stage5"
)

// badDay is a short day where much goes wrong.
func badDay(t *testing.T, seed uint64) *dayplan.Plan {
	t.Helper()
	p := dayplan.DefaultParams(seed, 200)
	p.FaultRate, p.DoubleClickRate, p.EditRate, p.LateRetryRate = 0.5, 0.1, 0.1, 0.05
	plan, err := dayplan.Generate(seed, p)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func replayDay(t *testing.T, factory stage.Factory, plan *dayplan.Plan) (*replay.DayRun, []byte) {
	t.Helper()
	var log bytes.Buffer
	run, err := replay.InProcess(context.Background(), factory, plan, &log, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return run, log.Bytes()
}

// TestReplay_NaiveServerExecutesRetriesTwice: the naive server runs the
// retry of every request whose response was lost, and the reconciliation
// says so, while the books still add up (nothing is lost, only doubled).
func TestReplay_NaiveServerExecutesRetriesTwice(t *testing.T) {
	plan := badDay(t, 4)
	run, log := replayDay(t, sol0.New, plan)
	rc := replay.ReconcileDay(run.Result)
	if rc.Valid || rc.Counts.DoubleApplied == 0 {
		t.Fatalf("the naive server reconciled as valid with %d doubles", rc.Counts.DoubleApplied)
	}
	if rc.Counts.LostTransfers != 0 || rc.Counts.BalanceMismatches != 0 || !rc.Money.Conserved || rc.Counts.UnexpectedStatus != 0 {
		t.Errorf("counts %+v, money %+v: the naive server doubles money but loses none", rc.Counts, rc.Money)
	}
	reached := 0
	for _, op := range plan.Ops {
		for _, p := range op.Fate.Faults {
			if p.Reached() {
				reached++
			}
		}
	}
	if rc.Counts.ExtraExecutions < reached {
		t.Errorf("%d extra executions; the plan has %d attempts the server ran and the client never heard of", rc.Counts.ExtraExecutions, reached)
	}
	tally, err := sol0.Tally(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if tally != run.Truth || tally.DoubleTransfers == 0 || tally.EditedResubmissions == 0 {
		t.Errorf("reference tally %+v, truth from the books %+v", tally, run.Truth)
	}
}

// TestReplay_SafeServerExecutesOnce: with keys, fingerprints, replay and
// retention, the same bad day executes every operation at most once; the
// late retries run again because their keys have expired.
func TestReplay_SafeServerExecutesOnce(t *testing.T) {
	plan := badDay(t, 4)
	run, _ := replayDay(t, sol5.New, plan)
	rc := replay.ReconcileDay(run.Result)
	if !rc.Valid {
		var b bytes.Buffer
		rc.WriteReport(&b, 5, "")
		t.Fatalf("solutions/stage5 does not reconcile:\n%s", b.String())
	}
	if c := rc.Counts; c.OriginalAnswers != c.ExecutedOnce || c.NoUsableAnswer+c.WrongAnswers+c.StuckInProgress != 0 {
		t.Errorf("counts %+v: every client of an executed operation should know its original answer", c)
	}
	late := 0
	for _, op := range plan.Ops {
		if op.Fate.LateRetry {
			late++
		}
	}
	if late == 0 || rc.Counts.LateReexecuted == 0 || rc.Counts.LateReexecuted > late {
		t.Errorf("%d late retries re-executed of %d", rc.Counts.LateReexecuted, late)
	}
}

// TestReplay_ForgetfulServerLeavesClientsWithoutAnswers: stage 1 executes
// everything once, and a client whose 201 was lost is told 409
// duplicate-request on every retry: it never learns its transfer's id, so
// the day is invalid although the money is right.
func TestReplay_ForgetfulServerLeavesClientsWithoutAnswers(t *testing.T) {
	plan := badDay(t, 4)
	run, _ := replayDay(t, sol1.New, plan)
	rc := replay.ReconcileDay(run.Result)
	if rc.Valid || rc.Counts.NoUsableAnswer == 0 || rc.Counts.DoubleApplied != 0 {
		t.Fatalf("solutions/stage1: valid %v, counts %+v; want no doubles and clients without a usable answer", rc.Valid, rc.Counts)
	}
	if rc.Counts.OriginalAnswers+rc.Counts.NoUsableAnswer+rc.Counts.WrongAnswers+rc.Counts.StuckInProgress != rc.Counts.ExecutedOnce {
		t.Errorf("counts %+v: every executed operation's client knows one thing", rc.Counts)
	}
}

// TestReplay_SameSeedSameOutcome: with one client at a time, a replay's
// attempts and answers do not depend on the run.
func TestReplay_SameSeedSameOutcome(t *testing.T) {
	plan := badDay(t, 9)
	a, _ := replayDay(t, sol0.New, plan)
	b, _ := replayDay(t, sol0.New, plan)
	ra, rb := replay.ReconcileDay(a.Result), replay.ReconcileDay(b.Result)
	if ra.Counts != rb.Counts || a.Truth != b.Truth {
		t.Errorf("two replays differ: %+v / %+v", ra.Counts, rb.Counts)
	}
}

// plainTransfers is a day of n transfers that meet no fault, with no
// double click, edit or late retry: a test gives them the fates it needs.
func plainTransfers(t *testing.T, n int) *dayplan.Plan {
	t.Helper()
	return plainDay(t, n, 0)
}

// plainDeposits is plainTransfers' day with deposits.
func plainDeposits(t *testing.T, n int) *dayplan.Plan {
	t.Helper()
	return plainDay(t, n, 1)
}

// plainDay is a day of n plain operations, a share depositRate of them
// deposits and the others transfers.
func plainDay(t *testing.T, n int, depositRate float64) *dayplan.Plan {
	t.Helper()
	p := dayplan.DefaultParams(1, n)
	p.FaultRate, p.DoubleClickRate, p.EditRate, p.LateRetryRate, p.DepositRate = 0, 0, 0, 0, depositRate
	plan, err := dayplan.Generate(1, p)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// openingOf is the lab's state after the reset to plan's population:
// every account holds 10,000,000 won and nothing has executed.
func openingOf(plan *dayplan.Plan) labctl.State {
	opening := labctl.State{Executions: map[string]int64{}}
	for _, c := range plan.Customers() {
		for _, a := range c.Accounts {
			opening.Accounts = append(opening.Accounts, bank.Balance{ID: a, Customer: c.ID, Balance: 10_000_000})
		}
	}
	return opening
}

// TestReconcileDay_Findings builds replays by hand, each with one thing
// wrong, and checks that the reconciliation names it.
func TestReconcileDay_Findings(t *testing.T) {
	plan := plainTransfers(t, 1)
	op := plan.Ops[0]
	effect, _ := op.Effect(op.Amount)
	opening := openingOf(plan)
	after := func(execs int64, skew int64) labctl.State {
		st := labctl.State{Executions: map[string]int64{op.Op: execs}}
		for _, a := range opening.Accounts {
			a.Balance += execs*effect[a.ID] + skew
			st.Accounts = append(st.Accounts, a)
		}
		return st
	}
	ok := replay.Attempt{Op: op.Op, Submission: replay.SubmitOriginal, N: 1, Status: 201, Response: `{"id":"tr_1"}`, Final: true}
	// lost is a first attempt the server executed and whose 201 the
	// network threw away; retried is the attempt after it.
	lost := replay.Attempt{Op: op.Op, Submission: replay.SubmitOriginal, N: 1, Fault: dayplan.ResponseWithheld, Error: "timeout",
		Unseen: &replay.ServerAnswer{Status: 201, Response: `{"id":"tr_1"}`}}
	retried := func(status int, replayed bool, body, prob string) replay.Attempt {
		return replay.Attempt{Op: op.Op, Submission: replay.SubmitOriginal, N: 2, Status: status, Replayed: replayed, Response: body, Problem: prob, Final: true}
	}
	toldToWait := retried(409, false, "", problem.RequestInProgress.URI())
	toldToWait.GaveUp = true
	// died is a first attempt the server died on before the money moved.
	died := replay.Attempt{Op: op.Op, Submission: replay.SubmitOriginal, N: 1, Error: "EOF"}
	// keyRows gives st a key table of others' rows, then op's in each
	// of states.
	const inProgress, completed = "in_progress", "completed"
	keyRows := func(st labctl.State, others int, states ...string) labctl.State {
		for i := range others {
			st.Keys = append(st.Keys, map[string]any{"key": fmt.Sprintf("other-%d", i), "state": completed})
		}
		for _, state := range states {
			st.Keys = append(st.Keys, map[string]any{"key": op.Key, "customer_id": op.Customer, "state": state})
		}
		return st
	}
	cases := []struct {
		name     string
		attempts []replay.Attempt
		final    labctl.State
		valid    bool
		kind     string
	}{
		{"executed once", []replay.Attempt{ok}, after(1, 0), true, ""},
		{"executed twice", []replay.Attempt{{Op: op.Op, Submission: replay.SubmitOriginal, N: 1, Fault: dayplan.ResponseWithheld, Error: "timeout"}, func() replay.Attempt {
			a := ok
			a.N = 2
			return a
		}()}, after(2, 0), false, "double_applied"},
		{"told success, never executed", []replay.Attempt{ok}, after(0, 0), false, "lost_transfers"},
		{"replay differs", []replay.Attempt{ok, {Op: op.Op, Submission: replay.SubmitDoubleClick, N: 1, Status: 201, Replayed: true, Response: `{"id":"tr_2"}`, Final: true}},
			after(1, 0), false, "wrong_answers"}, // the double click was given another answer than its execution's
		{"gave up on 500s", []replay.Attempt{{Op: op.Op, Submission: replay.SubmitOriginal, N: 1, Status: 500, Problem: "/problems/internal", Final: true, GaveUp: true}},
			after(0, 0), false, "unexpected_status"},
		{"money from nowhere", []replay.Attempt{ok}, after(1, 5), false, "balance_mismatches"},
		// What the client finally knows: a server that forgets the
		// answer of a lost response (stages 1-3) or makes up another
		// fails even though the money is right.
		{"lost response, then the replayed original", []replay.Attempt{lost, retried(201, true, `{"id":"tr_1"}`, "")},
			after(1, 0), true, ""},
		{"the server crashed before answering, then the stored answer", []replay.Attempt{
			{Op: op.Op, Submission: replay.SubmitOriginal, N: 1, Error: "EOF"}, retried(201, true, `{"id":"tr_1"}`, "")},
			after(1, 0), true, ""},
		{"lost response, then 409 duplicate-request", []replay.Attempt{lost, retried(409, false, "", problem.DuplicateRequest.URI())},
			after(1, 0), false, "no_usable_answer"},
		{"lost response, then another answer", []replay.Attempt{lost, retried(201, true, `{"id":"tr_2"}`, "")},
			after(1, 0), false, "wrong_answers"},
		// Told in progress until it gave up, the client of an executed
		// operation is judged by the key table read at the end of the
		// day, as the single checks read it: a row in progress is a
		// stuck key; a completed row, or none in a table shown whole, no
		// usable answer (a server that tells every retry to wait of its
		// own accord); no table, or one that shows its newest rows only
		// and not the key, could not observe which.
		{"lost response, then in progress to the end", []replay.Attempt{lost, toldToWait},
			keyRows(after(1, 0), 0, inProgress), false, "stuck_in_progress"},
		{"lost response, then in progress to the end of a completed key", []replay.Attempt{lost, toldToWait},
			keyRows(after(1, 0), 0, completed), false, "no_usable_answer"},
		{"lost response, then in progress to the end of a key the table does not have", []replay.Attempt{lost, toldToWait},
			keyRows(after(1, 0), 3), false, "no_usable_answer"},
		{"lost response, then in progress to the end, and no key table", []replay.Attempt{lost, toldToWait},
			after(1, 0), false, "key_unobserved"},
		{"lost response, then in progress to the end, and a key table that shows others", []replay.Attempt{lost, toldToWait},
			keyRows(after(1, 0), labctl.MaxStateKeys), false, "key_unobserved"},
		// An operation that never executed, told in progress until it
		// gave up, is judged by the same key table: before, by the 409
		// alone, a stuck key whatever the table said.
		{"the server died before the money moved, and the key stayed in progress", []replay.Attempt{died, toldToWait},
			keyRows(after(0, 0), 0, inProgress), false, "stuck_in_progress"},
		{"the server died before the money moved, and in progress to the end of a completed key", []replay.Attempt{died, toldToWait},
			keyRows(after(0, 0), 0, completed), false, "no_usable_answer"},
		{"the server died before the money moved, and in progress to the end of a key the table does not have", []replay.Attempt{died, toldToWait},
			keyRows(after(0, 0), 3), false, "no_usable_answer"},
		{"the server died before the money moved, and in progress to the end, and no key table", []replay.Attempt{died, toldToWait},
			after(0, 0), false, "key_unobserved"},
		// Told 409 duplicate-request, a request the books show never
		// ran is one verdict, the checks' "told duplicate, never ran".
		{"an edit told it is a duplicate", []replay.Attempt{ok, {Op: op.Op, Submission: replay.SubmitEdit, N: 1, Status: 409, Problem: problem.DuplicateRequest.URI(), Final: true}},
			after(1, 0), false, "told_duplicate"},
		{"an operation told it is a duplicate, never executed", []replay.Attempt{retried(409, false, "", problem.DuplicateRequest.URI())},
			after(0, 0), false, "told_duplicate"},
		{"an operation refused 422 for a key another customer used", []replay.Attempt{retried(422, false, "", problem.IdempotencyKeyReused.URI())},
			after(0, 0), false, "unexpected_status"},
		{"an edit refused for its key", []replay.Attempt{ok, {Op: op.Op, Submission: replay.SubmitEdit, N: 1, Status: 422, Problem: problem.IdempotencyKeyReused.URI(), Final: true}},
			after(1, 0), true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The books hold tr_1, op's one execution, whenever it executed.
			res := &replay.Result{Plan: plan, Attempts: c.attempts, Opening: opening, Day: c.final, Final: c.final, Transfers: map[string]bank.Executed{"tr_1": {ID: "tr_1", Op: op.Op, Amount: op.Amount}}}
			rc := replay.ReconcileDay(res)
			if rc.Valid != c.valid {
				t.Fatalf("valid %v, want %v (%+v)", rc.Valid, c.valid, rc.Counts)
			}
			if c.kind != "" && (len(rc.Findings) == 0 || rc.Findings[0].Kind != c.kind) {
				t.Errorf("findings %+v, want %s first", rc.Findings, c.kind)
			}
			oneVerdictEach(t, rc)
		})
	}
}

// TestReconcileDay_DepositEditJudgedFromTheBooks: a deposit whose
// original answer was lost and whose clerk's edit was answered 201
// naming dp_1, the first answer to name it. The books decide what the
// edit did: dp_1 at the original amount is the original's execution
// replayed to the edit (a wrong answer, and the balance holds the
// original amount); dp_1 at the edited amount is the edit's own
// (the original never ran). It catches a reconciliation that judges a
// deposit's edit by which answer named the execution first (it would
// take the first for the edit's execution, expect the edited amount and
// find the balance off), and one that counts what the deposits brought
// in at the planned amount when the books hold the edited one.
func TestReconcileDay_DepositEditJudgedFromTheBooks(t *testing.T) {
	plan := plainDeposits(t, 1)
	op := &plan.Ops[0]
	op.Fate.EditedAmount = op.Amount + 1000
	opening := openingOf(plan)
	attempts := []replay.Attempt{
		{Op: op.Op, Submission: replay.SubmitOriginal, N: 1, Fault: dayplan.ResponseWithheld, Error: "timeout", Final: true, GaveUp: true},
		{Op: op.Op, Submission: replay.SubmitEdit, N: 1, Status: 201, Response: `{"id":"dp_1"}`, Final: true},
	}
	for _, c := range []struct {
		name      string
		moved     int64 // the amount the books hold dp_1 at
		wrongEdit int   // edits answered 2xx that never ran
	}{
		{"the original's execution, replayed to the edit", op.Amount, 1},
		{"the edit's own execution", op.Fate.EditedAmount, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			effect, err := op.Effect(c.moved)
			if err != nil {
				t.Fatal(err)
			}
			final := labctl.State{Executions: map[string]int64{op.Op: 1}}
			for _, a := range opening.Accounts {
				a.Balance += effect[a.ID]
				final.Accounts = append(final.Accounts, a)
			}
			res := &replay.Result{Plan: plan, Attempts: attempts, Opening: opening, Day: final, Final: final,
				Deposits: map[string]bank.Executed{"dp_1": {ID: "dp_1", Op: op.Op, Amount: c.moved}}}
			rc := replay.ReconcileDay(res)
			if rc.Counts.BalanceMismatches != 0 || rc.Money.Deposited != c.moved || !rc.Money.Conserved {
				t.Errorf("counts %+v, money %+v: the books hold one deposit of %s won, and the balances hold it", rc.Counts, rc.Money, bank.FormatWon(c.moved))
			}
			if rc.Counts.EditsAnsweredWrong != c.wrongEdit {
				t.Errorf("edits answered wrong %d, want %d", rc.Counts.EditsAnsweredWrong, c.wrongEdit)
			}
		})
	}
}

// TestReconcileDay_DepositAnswerIsItsExecutionsByTheBooks: two deposits
// executed once each, dp_1 and dp_2 in the books; the first's 201 was
// lost and its retry was answered 201 naming a deposit. The books say
// whose answer that is: dp_1, listed under the operation, is its
// execution's, replayed; dp_2, listed under the other operation, and
// dp_9, listed under none, are wrong answers (the client was told of
// money that is not its own). It catches a reconciliation that takes any
// id that is not a transfer's for a deposit's execution (the client would
// be counted as knowing its original answer, and the day valid).
func TestReconcileDay_DepositAnswerIsItsExecutionsByTheBooks(t *testing.T) {
	plan := plainDeposits(t, 2)
	op, other := &plan.Ops[0], &plan.Ops[1]
	opening := openingOf(plan)
	final := labctl.State{Executions: map[string]int64{op.Op: 1, other.Op: 1}}
	moved := map[string]int64{}
	for _, o := range []*dayplan.Op{op, other} {
		effect, err := o.Effect(o.Amount)
		if err != nil {
			t.Fatal(err)
		}
		for acc, d := range effect {
			moved[acc] += d
		}
	}
	for _, a := range opening.Accounts {
		a.Balance += moved[a.ID]
		final.Accounts = append(final.Accounts, a)
	}
	books := map[string]bank.Executed{"dp_1": {ID: "dp_1", Op: op.Op, Amount: op.Amount}, "dp_2": {ID: "dp_2", Op: other.Op, Amount: other.Amount}}
	for _, c := range []struct {
		name  string
		named string // the deposit the retry's 201 names
		valid bool
	}{
		{"its own deposit, replayed", "dp_1", true},
		{"the other operation's deposit", "dp_2", false},
		{"a deposit the books do not hold", "dp_9", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			attempts := []replay.Attempt{
				{Op: op.Op, Submission: replay.SubmitOriginal, N: 1, Fault: dayplan.ResponseWithheld, Error: "timeout",
					Unseen: &replay.ServerAnswer{Status: 201, Response: `{"id":"dp_1"}`}},
				{Op: op.Op, Submission: replay.SubmitOriginal, N: 2, Status: 201, Replayed: true, Response: `{"id":"` + c.named + `"}`, Final: true},
				{Op: other.Op, Submission: replay.SubmitOriginal, N: 1, Status: 201, Response: `{"id":"dp_2"}`, Final: true},
			}
			rc := replay.ReconcileDay(&replay.Result{Plan: plan, Attempts: attempts, Opening: opening, Day: final, Final: final, Deposits: books})
			if rc.Valid != c.valid || rc.Counts.BalanceMismatches != 0 {
				t.Fatalf("valid %v, want %v (%+v)", rc.Valid, c.valid, rc.Counts)
			}
			if !c.valid && (rc.Counts.WrongAnswers != 1 || rc.Findings[0].Kind != "wrong_answers" || rc.Findings[0].Op != op.Op) {
				t.Errorf("counts %+v, findings %+v: want one wrong answer, to %s", rc.Counts, rc.Findings, op.Op)
			}
			oneVerdictEach(t, rc)
		})
	}
}

// oneVerdictEach checks that every finding of rc has one verdict: the
// day's verdict gives one clause a kind of finding, and the scoreboard's
// row counts each finding in one column. It catches a refusal counted
// both as a money finding and as an unexpected answer.
func oneVerdictEach(t *testing.T, rc replay.DayReconciliation) {
	t.Helper()
	kinds := map[string]bool{}
	findings := 0
	for _, f := range rc.Findings {
		switch f.Kind {
		case "balance_mismatches", "negative_balances":
			kinds["balances"] = true // one clause, and the books column
		default:
			kinds[f.Kind] = true
			findings++
		}
	}
	clauses := 0
	if v := rc.Verdict(); v != "" {
		clauses = len(strings.Split(v, "; "))
	}
	if clauses != len(kinds) {
		t.Errorf("verdict %q: %d clauses for the findings' %d kinds %v", rc.Verdict(), clauses, len(kinds), kinds)
	}
	var b strings.Builder
	if err := scoreboard.Write(&b, []scoreboard.Row{scoreboard.NewRow(1, "", rc)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	heads, row := strings.Split(lines[0], "|"), strings.Split(lines[2], "|")
	counted := 0
	for i, h := range heads {
		switch strings.TrimSpace(h) {
		case "stage", "late re-executed": // no finding
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(row[i])); err == nil {
			counted += n
		}
	}
	if counted != findings {
		t.Errorf("the scoreboard counts %d findings, the reconciliation has %d:\n%s", counted, findings, b.String())
	}
}

// A 422 idempotency-key-reused for a key only its own operation used (a
// retry the server refused because another encoder spelled it) is an
// unexpected answer, not a refusal for another customer's key; the same
// refusal for a key another customer used first is one.
func TestReconcileDay_RefusedForOthersKeyOnlyWhenAnotherCustomerUsedIt(t *testing.T) {
	for _, shared := range []bool{false, true} {
		plan := plainTransfers(t, 2)
		first, second := plan.Ops[0], &plan.Ops[1]
		if shared {
			if second.Customer == first.Customer {
				t.Skip("the plan's two operations are one customer's")
			}
			second.Key = first.Key
		}
		opening := openingOf(plan)
		final := labctl.State{Executions: map[string]int64{first.Op: 1}}
		effect, _ := first.Effect(first.Amount)
		for _, a := range opening.Accounts {
			a.Balance += effect[a.ID]
			final.Accounts = append(final.Accounts, a)
		}
		attempts := []replay.Attempt{
			{Op: first.Op, Submission: replay.SubmitOriginal, N: 1, Status: 201, Response: `{"id":"tr_1"}`, Final: true},
			{Op: second.Op, Submission: replay.SubmitOriginal, N: 1, Fault: dayplan.ResetAfterProcessing, Error: "reset"},
			{Op: second.Op, Submission: replay.SubmitOriginal, N: 2, Status: 422, Problem: problem.IdempotencyKeyReused.URI(), Respelled: !shared, Final: true},
		}
		res := &replay.Result{Plan: plan, Attempts: attempts, Opening: opening, Day: final, Final: final,
			Transfers: map[string]bank.Executed{"tr_1": {ID: "tr_1", Op: first.Op, Amount: first.Amount}}}
		rc := replay.ReconcileDay(res)
		want := 0
		if shared {
			want = 1
		}
		if rc.Counts.UnexpectedStatus != 1 || rc.Counts.RefusedForOthersKey != want {
			t.Errorf("shared key %v: unexpected answers %d, refused for another's key %d; want 1 and %d", shared, rc.Counts.UnexpectedStatus, rc.Counts.RefusedForOthersKey, want)
		}
	}
}

// toldToWaitForGood answers every request of a key after the first that
// reaches the server 409 request-in-progress, Retry-After and all, as
// audit/testdata/every409 does: a lock in memory on each key, never let
// go, in front of a server that completes the key and keeps its answer.
type toldToWaitForGood struct {
	base http.RoundTripper
	mu   sync.Mutex
	held map[string]bool
}

func (w *toldToWaitForGood) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" || r.Method != http.MethodPost {
		return w.base.RoundTrip(r)
	}
	name := r.Header.Get("Authorization") + " " + r.URL.Path + " " + key
	w.mu.Lock()
	taken := w.held[name]
	w.held[name] = true
	w.mu.Unlock()
	if !taken {
		return w.base.RoundTrip(r)
	}
	if r.Body != nil {
		r.Body.Close()
	}
	rec := httptest.NewRecorder()
	problem.Write(rec, &problem.Error{Type: problem.RequestInProgress, RetryAfter: time.Second, Detail: "a request with this key is in progress"})
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// TestReplay_ToldToWaitForAKeyTheBooksCompleted: solutions/stage5 behind
// a lock on each key that tells every retry to wait, for good. Each
// operation whose first answer was lost executed, and its client gave up
// told 409 request-in-progress; the key table at the end of the day
// shows each such key completed, so each is a client without a usable
// answer, as S3.retry-during-original judges one, not a stuck key. So is
// each operation whose original failed before its money moved (its claim
// released, the lock kept): it never ran, and the table shows no key in
// progress. It catches a reconciliation that takes the 409 alone for a
// stuck key, for an operation that executed or one that never ran (seed
// 4: 2 such never ran, counted stuck before).
func TestReplay_ToldToWaitForAKeyTheBooksCompleted(t *testing.T) {
	p := dayplan.DefaultParams(4, 40)
	p.FaultRate, p.DoubleClickRate, p.EditRate, p.LateRetryRate = 0.5, 0, 0, 0
	plan, err := dayplan.Generate(4, p)
	if err != nil {
		t.Fatal(err)
	}
	// Clients give up after 10 minutes of the plan's clock, as in
	// S6.day-replay-through-faults: told to wait for good, each retries
	// until its horizon.
	policy := replay.DefaultRetryPolicy()
	policy.Horizon = 10 * time.Minute
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	run, err := replay.InProcess(context.Background(), sol5.New, plan, nil,
		replay.Options{Base: &toldToWaitForGood{base: tr, held: map[string]bool{}}, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	rc := replay.ReconcileDay(run.Result)
	c := rc.Counts
	if c.StuckInProgress != 0 || c.KeyUnobserved != 0 || c.NoUsableAnswer == 0 {
		var b bytes.Buffer
		rc.WriteReport(&b, 3, "")
		t.Fatalf("%d keys stuck (%d of operations that never ran), %d not observed, %d clients without a usable answer; want 0, 0 and some:\n%s",
			c.StuckInProgress, c.StuckNeverExecuted, c.KeyUnobserved, c.NoUsableAnswer, b.String())
	}
	if c.OriginalAnswers+c.NoUsableAnswer-c.NoAnswerNeverExecuted+c.WrongAnswers+c.StuckInProgress-c.StuckNeverExecuted != c.ExecutedOnce+c.DoubleApplied {
		t.Errorf("counts %+v: every executed operation's client knows one thing", c)
	}
	if h := rc.Harm(); h != judging.NoUsableAnswer {
		t.Errorf("the day's harm is %q, want %q", h, judging.NoUsableAnswer)
	}
}
