package replay

import (
	"cmp"
	"fmt"
	"slices"

	"idemlab/grader/dayplan"
	"idemlab/grader/judging"
	"idemlab/kit/bank"
	"idemlab/kit/problem"
)

// DayReconciliation is what a replayed day did to the money: how many times
// the server executed each operation, against what its clients were told,
// and whether the balances add up (docs/grader.md, "A day of faults").
type DayReconciliation struct {
	// Valid is true when nothing was executed twice within the retention
	// period, nothing was lost, every client whose operation executed
	// ends knowing its original answer, every answer was one the contract
	// allows and the balances add up; no invoice was paid twice, no
	// settings change a clerk was told was saved was lost, and, when the
	// core ledger is reconciled, every executed transfer is posted there
	// once and nothing else is.
	Valid    bool `json:"valid"`
	Ops      int  `json:"ops"`
	Attempts int  `json:"attempts"`
	// FaultsMet counts the attempts that met each failure point.
	FaultsMet map[dayplan.Point]int `json:"faults_met"`
	Counts    DayCounts             `json:"counts"`
	Money     DayMoney              `json:"money"`
	// Invoices counts the invoice payments of the day (transfers with a
	// reference), SettingsEdits its settings edits; CoreReconciled says
	// whether the core ledger's postings were read.
	Invoices       int  `json:"invoices,omitempty"`
	SettingsEdits  int  `json:"settings_edits,omitempty"`
	CoreReconciled bool `json:"core_reconciled,omitempty"`
	// Findings are the operations and accounts behind the counts, worst first.
	Findings []DayFinding `json:"findings,omitempty"`
	// Notes are things a reader should know that are not failures.
	Notes []string `json:"notes,omitempty"`
}

// DayCounts are the named counts of results.json.
type DayCounts struct {
	// ExecutedOnce and NotExecuted count operations by their executions
	// during the day.
	ExecutedOnce int `json:"executed_once"`
	NotExecuted  int `json:"not_executed"`
	// DoubleApplied counts operations executed more than once.
	DoubleApplied int `json:"double_applied"`
	// ExtraExecutions counts the executions after each operation's first.
	ExtraExecutions int `json:"extra_executions"`
	// MoneyMovedTwice is the won those extra executions moved.
	MoneyMovedTwice int64 `json:"money_moved_twice"`
	// LostTransfers counts operations a client was told succeeded and that
	// the server never executed.
	LostTransfers int `json:"lost_transfers"`
	// MismatchedReplays counts operations with a replay that differs
	// from the answer it replays: a 2xx naming an execution already
	// answered, with other bytes, whatever its Idempotent-Replayed; or a
	// 422 marked as a replay that differs from the first answer.
	MismatchedReplays int `json:"mismatched_replays"`
	// UnexpectedStatus counts submissions whose final answer the contract
	// does not allow for them (a 5xx, a 400 for a valid body, no answer),
	// but for those told 409 duplicate-request that never ran, which are
	// ToldDuplicate's.
	UnexpectedStatus int `json:"unexpected_status"`
	// RefusedForOthersKey counts, among the unexpected answers, the
	// operations refused 422 idempotency-key-reused for a key another
	// customer had used too (keys not scoped to the customer): the
	// client knows its request did not run, and cannot send it. A 422
	// for a key no other customer used is not one of them.
	RefusedForOthersKey int `json:"refused_for_others_key"`
	// ToldDuplicate counts the submissions told 409 duplicate-request
	// whose request the books show never executed: an operation refused
	// so for another customer's key (or for a claim its own request left
	// behind when it died), or an edit the server took for a retry of
	// the original (no fingerprint: the clerk believes the edited amount
	// went), counted apart as well in EditsToldDuplicate. A money
	// finding, as the checks name it ("told duplicate, never ran"): told
	// its request already ran, the client will not send it again, and
	// never learns what became of it. None of them is counted in
	// UnexpectedStatus too: each refusal has one verdict.
	ToldDuplicate      int `json:"told_duplicate"`
	EditsToldDuplicate int `json:"edits_told_duplicate"`
	// LateReexecuted counts retries after the retention period that ran
	// as new requests: allowed, since the client retried after the key
	// had expired, and the reason the client's retry horizon must be
	// shorter than the retention.
	LateReexecuted int `json:"late_reexecuted"`
	// What each client finally knows of an operation that executed
	// during the day, from the last answers of its submission and its
	// double click: the original answer (the bytes of the first answer
	// that named the execution the books hold), a wrong answer (a 2xx
	// with other bytes: another operation's result, a recomputed one),
	// no usable answer (refused without the result until it stopped
	// retrying, e.g. 409 duplicate-request, or 409 request-in-progress
	// for a key the key table shows is not), or a key still in progress
	// when its retry horizon ended, as the key table read at the end of
	// the day shows it. Each such operation is counted in one of the
	// four, or, told in progress until it gave up for a key the lab's
	// key table does not show (it shows the newest labctl.MaxStateKeys,
	// or none), in KeyUnobserved: judged no usable answer, since the
	// client never learned its result; whether its key is stuck as well
	// could not be observed. WrongAnswers also counts the clerks' edits
	// answered with a 2xx that the books show never executed (the
	// original's result, replayed to another request), counted apart as
	// well in EditsAnsweredWrong. An operation that never executed, its
	// client told in progress until it gave up, is judged by the same key
	// table: StuckInProgress, NoUsableAnswer and KeyUnobserved count it
	// too, and StuckNeverExecuted, NoAnswerNeverExecuted and
	// UnobservedNeverExecuted apart.
	OriginalAnswers    int `json:"original_answers"`
	WrongAnswers       int `json:"wrong_answers"`
	EditsAnsweredWrong int `json:"edits_answered_wrong"`
	NoUsableAnswer     int `json:"no_usable_answer"`
	StuckInProgress    int `json:"stuck_in_progress"`
	StuckNeverExecuted int `json:"stuck_never_executed"`
	KeyUnobserved      int `json:"key_unobserved"`
	// NoAnswerNeverExecuted and UnobservedNeverExecuted: see above.
	NoAnswerNeverExecuted   int `json:"no_answer_never_executed"`
	UnobservedNeverExecuted int `json:"key_unobserved_never_executed"`
	BalanceMismatches       int `json:"balance_mismatches"`
	NegativeBalances        int `json:"negative_balances"`
	// InvoicesPaidTwice counts the invoices (a customer's reference) that
	// more than one payment executed: payments under different keys, or
	// a payment again after its key expired (an operation's own retries
	// executed again within retention are double_applied). MoneyPaidTwice
	// is what the payments after each invoice's first moved.
	InvoicesPaidTwice int   `json:"invoices_paid_twice"`
	MoneyPaidTwice    int64 `json:"money_paid_twice"`
	// LostUpdates counts the settings changes a clerk was told were saved
	// (200) that the settings read after the edit do not hold: a money
	// finding, since the daily limit is a control on the money that
	// leaves an account. EditsNotServed counts the settings edits of a
	// server that serves no settings (404, before stage 7): a contract
	// difference, not a lost update.
	LostUpdates    int `json:"lost_updates"`
	EditsNotServed int `json:"edits_not_served"`
	// When the core ledger is reconciled: executions of a transfer the
	// core has no posting of (NotPosted), transfers posted more than once
	// (PostedTwice) and posted transfers the bank does not have
	// (PostedUnexecuted). Each is a difference between the bank's books
	// and the core's: money findings.
	NotPosted        int `json:"not_posted"`
	PostedTwice      int `json:"posted_twice"`
	PostedUnexecuted int `json:"posted_unexecuted"`
}

// DayMoney is the day's money in won.
type DayMoney struct {
	Opening int64 `json:"opening"`
	// Deposited is what the executed deposits brought in.
	Deposited int64 `json:"deposited"`
	Closing   int64 `json:"closing"`
	// Conserved: closing = opening + deposited. Transfers only move money.
	Conserved bool `json:"conserved"`
}

// DayFinding is one operation or account behind a count.
type DayFinding struct {
	// Kind is the count it belongs to, e.g. "double_applied".
	Kind string `json:"kind"`
	// Op or Account names what it is about.
	Op      string `json:"op,omitempty"`
	Account string `json:"account,omitempty"`
	// Submission is, for a finding about the answer one submission of
	// the operation ended with (told_duplicate), which it was: original,
	// double click, edit or late.
	Submission string `json:"submission,omitempty"`
	// Story says in one line what happened.
	Story string `json:"story"`
}

// sharedKeys are the keys of plan that operations of more than one
// customer use: a 422 idempotency-key-reused for one of them is a refusal
// for another customer's key, and for any other key it is not (a retry
// another encoder spelled, refused by a fingerprint of the raw bytes).
func sharedKeys(plan *dayplan.Plan) map[string]bool {
	first := map[string]string{} // key -> the first customer seen using it
	shared := map[string]bool{}
	for _, op := range plan.Ops {
		if op.Key == "" {
			continue
		}
		if c, ok := first[op.Key]; !ok {
			first[op.Key] = op.Customer
		} else if c != op.Customer {
			shared[op.Key] = true
		}
	}
	return shared
}

// Reconcile compares what the server executed (the executions per op of
// the lab state) with what the plan asked for and what the clients were
// told, and checks every balance against the opening balance plus the
// effects of the executions the server counted.
func ReconcileDay(res *Result) DayReconciliation {
	rc := DayReconciliation{Ops: len(res.Plan.Ops), Attempts: len(res.Attempts), FaultsMet: map[dayplan.Point]int{}}
	bySub := map[string]map[string][]Attempt{} // op → submission → attempts
	for _, a := range res.Attempts {
		if a.Fault != "" {
			rc.FaultsMet[a.Fault]++
		}
		if bySub[a.Op] == nil {
			bySub[a.Op] = map[string][]Attempt{}
		}
		bySub[a.Op][a.Submission] = append(bySub[a.Op][a.Submission], a)
	}
	if res.LateSkipped != "" {
		rc.Notes = append(rc.Notes, "the late retries were not sent: "+res.LateSkipped)
	}

	opening := map[string]int64{}
	for _, a := range res.Opening.Accounts {
		opening[a.ID] = a.Balance
		rc.Money.Opening += a.Balance
	}
	expected := copyBalances(opening)
	add := func(kind string, f DayFinding) {
		f.Kind = kind
		rc.Findings = append(rc.Findings, f)
	}

	invoices := invoicePayments(res)
	moved := movedByAmount(res)
	shared := sharedKeys(res.Plan)
	ids := resources{}
	for i := range res.Plan.Ops {
		op := &res.Plan.Ops[i]
		subs := bySub[op.Op]
		clear(ids)
		if op.Endpoint == dayplan.Settings {
			rc.SettingsEdits++
			rc.reconcileSettings(op, subs)
			continue
		}
		day := res.Day.Executions[op.Op]
		late := res.Final.Executions[op.Op] - day
		story := func() string { return opStory(op, subs) }

		holds := res.holds(op)
		edited := editExecutions(op, moved)
		switch {
		case day == 0:
			rc.Counts.NotExecuted++
		case day == 1:
			rc.Counts.ExecutedOnce++
		default:
			rc.Counts.DoubleApplied++
			rc.Counts.ExtraExecutions += int(day - 1)
			original := day - edited
			rc.Counts.MoneyMovedTwice += max(original-1, 0)*op.Amount + edited*op.Fate.EditedAmount
			if original == 0 {
				rc.Counts.MoneyMovedTwice -= op.Fate.EditedAmount
			}
			add("double_applied", DayFinding{Op: op.Op, Story: fmt.Sprintf("executed %d times: %s", day, story())})
		}
		switch {
		case late > 0 && op.Reference != "":
			// counted with the invoice's payments
		case late == 1:
			rc.Counts.LateReexecuted++
		case late > 1:
			rc.Counts.DoubleApplied++
			rc.Counts.ExtraExecutions += int(late - 1)
			rc.Counts.MoneyMovedTwice += (late - 1) * op.Amount
			add("double_applied", DayFinding{Op: op.Op, Story: fmt.Sprintf("the late retry executed %d times: %s", late, story())})
		}

		told := false
		for _, as := range subs {
			if a := finalAttempt(as); a != nil && a.Succeeded() {
				told = true
			}
		}
		if told && day+late == 0 {
			rc.Counts.LostTransfers++
			add("lost_transfers", DayFinding{Op: op.Op, Story: "the client was told it succeeded; it was never executed: " + story()})
		}
		if mismatchedReplay(ids, holds, subs[SubmitOriginal], subs[SubmitDoubleClick]) {
			rc.Counts.MismatchedReplays++
			add("mismatched_replays", DayFinding{Op: op.Op, Story: "the replayed answers differ from the original's: " + story()})
		}
		for _, kind := range []string{SubmitOriginal, SubmitDoubleClick, SubmitEdit, SubmitLate} {
			a := finalAttempt(subs[kind])
			if a == nil {
				continue
			}
			// 409 duplicate-request tells a client its request already
			// executed. For an operation the books show never did, the
			// server took another customer's key, or a claim left by a
			// request that died, for this one's. One verdict, a money
			// one: told duplicate, never ran.
			if kind != SubmitEdit && a.Problem == problem.DuplicateRequest.URI() && day+late == 0 {
				rc.Counts.ToldDuplicate++
				add("told_duplicate", DayFinding{Op: op.Op, Submission: kind, Story: fmt.Sprintf("the %s submission was told 409 duplicate-request and the operation never executed: %s", kind, story())})
				continue
			}
			// For an edit, which never executed since its answer is no
			// 2xx, the server took the new amount for the old one's retry.
			if kind == SubmitEdit && a.Problem == problem.DuplicateRequest.URI() && edited == 0 {
				rc.Counts.EditsToldDuplicate++
				rc.Counts.ToldDuplicate++
				add("told_duplicate", DayFinding{Op: op.Op, Submission: kind, Story: fmt.Sprintf("the edit to %s won was told 409 duplicate-request and never executed: %s", bank.FormatWon(op.Fate.EditedAmount), story())})
				continue
			}
			// An edit told 2xx that the books show never executed was
			// given the original's result: the clerk believes the edited
			// amount went.
			if kind == SubmitEdit && a.Succeeded() && edited == 0 {
				rc.Counts.WrongAnswers++
				rc.Counts.EditsAnsweredWrong++
				add("wrong_answers", DayFinding{Op: op.Op, Story: fmt.Sprintf("the edit to %s won was answered %s (%.80s), and the books show it never executed: %s",
					bank.FormatWon(op.Fate.EditedAmount), a.answer(), a.Response, story())})
				continue
			}
			if (kind == SubmitOriginal || kind == SubmitDoubleClick) && a.GaveUp && a.Problem == problem.RequestInProgress.URI() {
				continue // counted in stuck_in_progress
			}
			if a.Problem == problem.DuplicateReference.URI() && invoices[invoiceOf(op)] > 0 {
				continue // the invoice is paid: the answer stage 8 gives
			}
			if !allowedFinal(kind, *a) {
				rc.Counts.UnexpectedStatus++
				if kind != SubmitEdit && a.Problem == problem.IdempotencyKeyReused.URI() && shared[op.Key] {
					rc.Counts.RefusedForOthersKey++
				}
				add("unexpected_status", DayFinding{Op: op.Op, Story: fmt.Sprintf("the %s submission ended with %s: %s", kind, a.answer(), story())})
			}
		}

		if day == 0 && stuck(subs[SubmitOriginal], subs[SubmitDoubleClick]) {
			// Never executed, and told to wait until it gave up: the key
			// table at the end of the day says which harm, not the 409.
			switch harm, rows, seen := judging.ToldToWait(res.Day, op.Key); {
			case !seen:
				rc.Counts.KeyUnobserved++
				rc.Counts.UnobservedNeverExecuted++
				add("key_unobserved", DayFinding{Op: op.Op, Story: "never executed, and told its key was in progress until the client gave up; the lab's key table does not show the key (" + rows + "), so whether it is stuck could not be observed: " + story()})
			case harm == judging.StuckKey:
				// A request that died before its money moved, and whose
				// key nobody took over.
				rc.Counts.StuckInProgress++
				rc.Counts.StuckNeverExecuted++
				add("stuck_in_progress", DayFinding{Op: op.Op, Story: "never executed, and the key was still in progress when the client's retry horizon ended (" + rows + "): " + story()})
			default:
				rc.Counts.NoUsableAnswer++
				rc.Counts.NoAnswerNeverExecuted++
				add("no_usable_answer", DayFinding{Op: op.Op, Story: "never executed, and told its key was in progress until the client gave up, though the key table shows it is not (" + rows + "): " + story()})
			}
		}
		if day > 0 {
			switch knows, a := clientKnows(ids, holds, subs[SubmitOriginal], subs[SubmitDoubleClick]); knows {
			case knowsOriginal:
				rc.Counts.OriginalAnswers++
			case knowsWrong:
				rc.Counts.WrongAnswers++
				add("wrong_answers", DayFinding{Op: op.Op, Story: fmt.Sprintf("executed, and the client was told %s with a body that is not the execution's (%.80s): %s", a.answer(), a.Response, story())})
			case knowsStuck:
				// Told to wait until it gave up: the key table at the end
				// of the day says which harm, not the 409.
				switch harm, rows, seen := judging.ToldToWait(res.Day, op.Key); {
				case !seen:
					rc.Counts.KeyUnobserved++
					add("key_unobserved", DayFinding{Op: op.Op, Story: "executed, and told its key was in progress until the client gave up; the lab's key table does not show the key (" + rows + "), so whether it is stuck could not be observed: " + story()})
				case harm == judging.StuckKey:
					rc.Counts.StuckInProgress++
					add("stuck_in_progress", DayFinding{Op: op.Op, Story: "executed, and the key was still in progress when the client's retry horizon ended (" + rows + "): " + story()})
				default:
					rc.Counts.NoUsableAnswer++
					add("no_usable_answer", DayFinding{Op: op.Op, Story: "executed, and told its key was in progress until the client gave up, though the key table shows it is not (" + rows + "): " + story()})
				}
			default:
				rc.Counts.NoUsableAnswer++
				add("no_usable_answer", DayFinding{Op: op.Op, Story: fmt.Sprintf("executed, and the client stopped at %s without ever learning the result: %s", a.answer(), story())})
			}
		}

		originals := day + late - edited
		if originals < 0 {
			rc.Notes = append(rc.Notes, fmt.Sprintf("%s: the books hold %d executions of the edited amount but the server counted %d", op.Op, edited, day+late))
			originals = 0
		}
		rc.apply(expected, op, op.Amount, originals)
		rc.apply(expected, op, op.Fate.EditedAmount, edited)
	}

	rc.reconcileInvoices(res, invoices)
	if res.Core != nil {
		rc.CoreReconciled = true
		rc.reconcileCore(res)
	}
	for _, a := range res.Final.Accounts {
		rc.Money.Closing += a.Balance
		if a.Balance < 0 {
			rc.Counts.NegativeBalances++
			add("negative_balances", DayFinding{Account: a.ID, Story: fmt.Sprintf("balance %s won", bank.FormatWon(a.Balance))})
		}
		if want, ok := expected[a.ID]; ok && want != a.Balance {
			rc.Counts.BalanceMismatches++
			add("balance_mismatches", DayFinding{Account: a.ID, Story: fmt.Sprintf(
				"balance %s won; opening %s plus the executions the server counted make %s", bank.FormatWon(a.Balance), bank.FormatWon(opening[a.ID]), bank.FormatWon(want))})
		}
	}
	rc.Money.Conserved = rc.Money.Closing == rc.Money.Opening+rc.Money.Deposited
	// VALID is a day with nothing to say against it.
	rc.Valid = rc.Verdict() == ""
	sortFindings(rc.Findings)
	return rc
}

// sortFindings puts findings in FindingKinds' order, worst first, each
// kind's in the order found.
func sortFindings(findings []DayFinding) {
	slices.SortStableFunc(findings, func(a, b DayFinding) int {
		return cmp.Compare(slices.Index(FindingKinds, a.Kind), slices.Index(FindingKinds, b.Kind))
	})
}

// holds returns whether the books hold a resource, by its id, as an
// execution of op: a transfer or deposit, as op's endpoint makes, that the
// bank lists with op's name.
func (res *Result) holds(op *dayplan.Op) func(id string) bool {
	books := res.Transfers
	if op.Endpoint == dayplan.Deposits {
		books = res.Deposits
	}
	return func(id string) bool {
		x, ok := books[id]
		return ok && x.Op == op.Op
	}
}

// invoiceKey is a customer's reference: what stage 8 pays once.
type invoiceKey struct{ customer, reference string }

func invoiceOf(op *dayplan.Op) invoiceKey { return invoiceKey{op.Customer, op.Reference} }

// invoicePayments counts, for each invoice of the day, the payments that
// executed: one for each of its operations that executed during the day
// (its own retries executed again are that operation's doubles), plus
// each execution of a late retry, which came after the key had expired.
func invoicePayments(res *Result) map[invoiceKey]int64 {
	paid := map[invoiceKey]int64{}
	for i := range res.Plan.Ops {
		op := &res.Plan.Ops[i]
		if op.Reference == "" {
			continue
		}
		day := res.Day.Executions[op.Op]
		paid[invoiceOf(op)] += min(day, 1) + res.Final.Executions[op.Op] - day
	}
	return paid
}

// reconcileInvoices counts the invoices paid more than once.
func (rc *DayReconciliation) reconcileInvoices(res *Result, paid map[invoiceKey]int64) {
	for i := range res.Plan.Ops {
		op := &res.Plan.Ops[i]
		if op.Reference == "" {
			continue
		}
		rc.Invoices++
		n := paid[invoiceOf(op)]
		if op.Repays != "" || n < 2 {
			continue // an invoice is told once, by its first payment
		}
		rc.Counts.InvoicesPaidTwice++
		rc.Counts.MoneyPaidTwice += (n - 1) * op.Amount
		rc.Findings = append(rc.Findings, DayFinding{Kind: "invoices_paid_twice", Op: op.Op,
			Story: fmt.Sprintf("invoice %s of %s paid %d times, %s won each", op.Reference, op.Customer, n, bank.FormatWon(op.Amount))})
	}
}

// apply adds n executions of op with amount to the expected balances.
func (rc *DayReconciliation) apply(expected map[string]int64, op *dayplan.Op, amount, n int64) {
	if n == 0 {
		return
	}
	effect, err := op.Effect(amount)
	if err != nil {
		rc.Notes = append(rc.Notes, err.Error())
		return
	}
	for acc, d := range effect {
		expected[acc] += n * d
	}
	if op.Endpoint == dayplan.Deposits {
		rc.Money.Deposited += n * amount
	}
}

func copyBalances(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
