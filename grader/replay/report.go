package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"idemlab/grader/dayplan"
	"idemlab/grader/judging"
	"idemlab/kit/bank"
)

// WriteReport writes the day's reconciliation for a person to read: the
// failure points met, the counts (money first, then what each client of
// an executed operation finally knows), up to examples findings of each
// kind, with all saying where the rest are, and the verdict.
func (rc DayReconciliation) WriteReport(w io.Writer, examples int, all string) {
	c := rc.Counts
	fmt.Fprintf(w, "%d operations, %d attempts\n", rc.Ops, rc.Attempts)
	var met []string
	for _, p := range dayplan.Points {
		if n := rc.FaultsMet[p]; n > 0 {
			met = append(met, fmt.Sprintf("%s %d", p, n))
		}
	}
	if len(met) > 0 {
		fmt.Fprintf(w, "failure points met: %s\n", strings.Join(met, ", "))
	}
	fmt.Fprintln(w)
	line := func(label string, v any, note string) {
		if note != "" {
			note = "   " + note
		}
		fmt.Fprintf(w, "  %-28s %v%s\n", label, v, note)
	}
	line("executed once", c.ExecutedOnce, "")
	line("never executed", c.NotExecuted, "(refused: insufficient funds, an invoice already paid, a key another customer used, or not sent)")
	line("executed more than once", c.DoubleApplied, pick(c.DoubleApplied > 0,
		fmt.Sprintf("<- DOUBLE: %d extra executions, %s won moved twice", c.ExtraExecutions, bank.FormatWon(c.MoneyMovedTwice)), ""))
	line("lost", c.LostTransfers, pick(c.LostTransfers > 0, "<- LOST: told success, nothing moved", ""))
	line("told duplicate, never ran", c.ToldDuplicate, pick(c.ToldDuplicate > 0,
		fmt.Sprintf("<- TOLD DUPLICATE: 409 duplicate-request, and the request never executed (%d of them edits)", c.EditsToldDuplicate), ""))
	line("edits told 2xx, never ran", c.EditsAnsweredWrong, pick(c.EditsAnsweredWrong > 0,
		"<- WRONG: given the original's result, the clerk believes the edited amount went", ""))
	line("never ran, key in progress", c.StuckNeverExecuted, pick(c.StuckNeverExecuted > 0,
		"<- STUCK: its request died before the money moved, and no retry took the key over", ""))
	if c.NoAnswerNeverExecuted > 0 {
		line("never ran, told to wait", c.NoAnswerNeverExecuted, "<- told in progress until it gave up, for a key the key table shows is not: it never learns its outcome")
	}
	if c.UnobservedNeverExecuted > 0 {
		line("never ran, key not observed", c.UnobservedNeverExecuted, "<- told in progress until it gave up: no usable answer; the lab's key table does not show whether the key is stuck as well")
	}
	line("mismatched replays", c.MismatchedReplays, "")
	line("unexpected answers", c.UnexpectedStatus, pick(c.RefusedForOthersKey > 0,
		fmt.Sprintf("(%d refused 422 for a key another customer used)", c.RefusedForOthersKey), ""))
	// The four lines under the heading count each operation that
	// executed once: the edits that never ran and the operations that
	// never executed, among the wrong answers and the stuck keys in
	// results.json, have their lines above.
	fmt.Fprintln(w, "  what each client whose operation executed finally knows:")
	wrong, stuck := c.WrongAnswers-c.EditsAnsweredWrong, c.StuckInProgress-c.StuckNeverExecuted
	noAnswer, unobserved := c.NoUsableAnswer-c.NoAnswerNeverExecuted, c.KeyUnobserved-c.UnobservedNeverExecuted
	line("  its original answer", c.OriginalAnswers, "")
	line("  a wrong answer", wrong, pick(wrong > 0, "<- WRONG: a 2xx that is not its execution's", ""))
	line("  no usable answer", noAnswer, pick(noAnswer > 0, "<- refused without the result until it stopped retrying", ""))
	line("  key still in progress", stuck, pick(stuck > 0, "<- STUCK at the end of its retry horizon", ""))
	if unobserved > 0 {
		line("  key not observed", unobserved, "<- told in progress until it gave up: no usable answer; the lab's key table does not show whether the key is stuck as well")
	}
	line("re-executed after retention", c.LateReexecuted, "(allowed: the client retried after the retention period, when its key had expired)")
	line("balances", pick(c.BalanceMismatches == 0, "every account = opening + the executions the server counted",
		fmt.Sprintf("%d accounts do not add up", c.BalanceMismatches)), "")
	line("money conserved", pick(rc.Money.Conserved, "yes", "NO"), fmt.Sprintf("(opening %s + deposited %s = closing %s)",
		bank.FormatWon(rc.Money.Opening), bank.FormatWon(rc.Money.Deposited), bank.FormatWon(rc.Money.Closing)))
	line("negative balances", c.NegativeBalances, "")
	if rc.Invoices > 0 {
		line("invoices paid twice", c.InvoicesPaidTwice, pick(c.InvoicesPaidTwice > 0,
			fmt.Sprintf("<- PAID TWICE: %s won paid again for invoices already paid", bank.FormatWon(c.MoneyPaidTwice)),
			fmt.Sprintf("(of %d invoice payments)", rc.Invoices)))
	}
	if rc.SettingsEdits > 0 {
		line("settings changes lost", c.LostUpdates, pick(c.LostUpdates > 0, "<- LOST UPDATE: a clerk was told 200 and the change is gone",
			fmt.Sprintf("(of %d edits by two clerks)", rc.SettingsEdits)))
		line("settings edits not served", c.EditsNotServed, pick(c.EditsNotServed > 0, "(404: the server serves no account settings)", ""))
	}
	if rc.CoreReconciled {
		line("core: not posted", c.NotPosted, pick(c.NotPosted > 0, "<- executed transfers the core ledger never heard of", ""))
		line("core: posted twice", c.PostedTwice, pick(c.PostedTwice > 0, "<- transfers the core ledger moved twice", ""))
		line("core: posted, not executed", c.PostedUnexecuted, pick(c.PostedUnexecuted > 0, "<- postings of transfers the bank does not have", ""))
	}
	total := map[string]int{}
	for _, f := range rc.Findings {
		total[f.Kind]++
	}
	shown := map[string]int{}
	for _, f := range rc.Findings {
		if shown[f.Kind]++; shown[f.Kind] > examples {
			continue
		}
		if shown[f.Kind] == 1 {
			fmt.Fprintf(w, "\n%s:\n", f.Kind)
		}
		fmt.Fprintf(w, "  %s%s  %s\n", f.Op, f.Account, f.Story)
		if shown[f.Kind] == examples && total[f.Kind] > examples {
			fmt.Fprintf(w, "  … and %d more%s\n", total[f.Kind]-examples, pick(all != "", " ("+all+")", ""))
		}
	}
	for _, n := range rc.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w)
	if rc.Valid {
		fmt.Fprintln(w, "VALID: every operation executed at most once within retention, every client knows its original answer, nothing lost, the books balance"+
			pick(c.LateReexecuted > 0, fmt.Sprintf(" (%d retried after retention and executed again, as the contract allows)", c.LateReexecuted), ""))
	} else {
		fmt.Fprintln(w, "INVALID: "+rc.Verdict())
	}
}

// Verdict says why the day is invalid, its findings joined with "; ", or
// "" when it is valid.
func (rc DayReconciliation) Verdict() string {
	c := rc.Counts
	var why []string
	// One clause a kind: the operations that never ran, told to wait for
	// good, are named inside their kind's.
	noAnswer := "clients never learned the result of an operation that executed"
	if n := c.NoAnswerNeverExecuted; n > 0 {
		noAnswer = fmt.Sprintf("clients never learned the result of their operation (%d of them never ran, told its key was in progress until they gave up, for a key the key table shows is not)", n)
	}
	unobserved := "clients of an executed operation told its key was in progress until they gave up, who never learned its result, whose key the lab's key table does not show (whether it is stuck as well could not be observed)"
	if n := c.UnobservedNeverExecuted; n > 0 {
		unobserved = fmt.Sprintf("clients told their operation's key was in progress until they gave up, who never learned what became of it, whose key the lab's key table does not show (whether it is stuck as well could not be observed), %d of them for an operation that never ran", n)
	}
	for _, f := range []struct {
		n    int
		what string
	}{
		{c.DoubleApplied, "operations executed more than once"},
		{c.LostTransfers, "told success and never executed"},
		{c.WrongAnswers, "clients were given a wrong answer"},
		{c.NoUsableAnswer, noAnswer},
		{c.ToldDuplicate, "clients told their request was a duplicate, and it never ran"},
		{c.StuckInProgress, "keys still in progress when their clients gave up"},
		{c.KeyUnobserved, unobserved},
		{c.MismatchedReplays, "replays differ from the original answer"},
		{c.UnexpectedStatus, "answers the contract does not allow"},
		{c.InvoicesPaidTwice, "invoices paid twice"},
		{c.LostUpdates, "settings changes lost"},
		{c.EditsNotServed, "settings edits not served"},
		{c.NotPosted, "executed transfers not posted to the core ledger"},
		{c.PostedTwice, "transfers posted twice"},
		{c.PostedUnexecuted, "postings of transfers never executed"},
	} {
		if f.n > 0 {
			why = append(why, fmt.Sprintf("%d %s", f.n, f.what))
		}
	}
	if c.BalanceMismatches > 0 || !rc.Money.Conserved || c.NegativeBalances > 0 {
		why = append(why, "the balances do not add up")
	}
	return strings.Join(why, "; ")
}

// Harm is the worst harm the day did to money, in the order a report
// names the harms (judging.Harm's constants): an operation executed more
// often than asked or an invoice paid twice, a lost operation, a client
// told its request was a duplicate when it never ran, balances that do
// not add up, a client given a wrong answer, one that never learned the
// result of an operation that executed, a key stuck in progress, a lost
// settings change, then a core ledger finding. It is "" when every
// finding of the day is a contract difference (a replay in other bytes,
// an answer the contract does not allow, a settings edit not served), or
// there is none.
func (rc DayReconciliation) Harm() judging.Harm {
	h, _ := rc.Harmed()
	return h
}

// Harmed is the day's worst harm (Harm) and how many operations or
// accounts the day's findings of that harm name, each once: what a
// results.json counts, since the day's operations are not named as a
// check's are. The count is 0 where no finding names one (money not
// conserved, with every balance read right).
func (rc DayReconciliation) Harmed() (judging.Harm, int) {
	for _, h := range harmKinds {
		if !h.found(rc) {
			continue
		}
		named := map[string]bool{}
		for _, f := range rc.Findings {
			if slices.Contains(h.kinds, f.Kind) && f.Op+f.Account != "" {
				named[f.Op+"\x00"+f.Account] = true
			}
		}
		return h.harm, len(named)
	}
	return "", 0
}

// harmKinds are the day's money harms, worst first (judging.Harm's
// order), each with whether a day's counts show it and the kinds of the
// findings behind it.
var harmKinds = []struct {
	harm  judging.Harm
	found func(rc DayReconciliation) bool
	kinds []string
}{
	{judging.Double, func(rc DayReconciliation) bool { return rc.Counts.DoubleApplied > 0 || rc.Counts.InvoicesPaidTwice > 0 },
		[]string{"double_applied", "invoices_paid_twice"}},
	{judging.Lost, func(rc DayReconciliation) bool { return rc.Counts.LostTransfers > 0 }, []string{"lost_transfers"}},
	{judging.ToldDuplicate, func(rc DayReconciliation) bool { return rc.Counts.ToldDuplicate > 0 }, []string{"told_duplicate"}},
	{judging.Unbalanced, func(rc DayReconciliation) bool {
		return rc.Counts.BalanceMismatches > 0 || !rc.Money.Conserved || rc.Counts.NegativeBalances > 0
	}, []string{"balance_mismatches", "negative_balances"}},
	{judging.WrongAnswer, func(rc DayReconciliation) bool { return rc.Counts.WrongAnswers > 0 }, []string{"wrong_answers"}},
	// A client told to wait until it gave up, for a key the lab's key
	// table does not show, never learned its result: no usable answer,
	// whether or not the key is stuck as well.
	{judging.NoUsableAnswer, func(rc DayReconciliation) bool { return rc.Counts.NoUsableAnswer > 0 || rc.Counts.KeyUnobserved > 0 },
		[]string{"no_usable_answer", "key_unobserved"}},
	{judging.StuckKey, func(rc DayReconciliation) bool { return rc.Counts.StuckInProgress > 0 }, []string{"stuck_in_progress"}},
	{judging.LostUpdate, func(rc DayReconciliation) bool { return rc.Counts.LostUpdates > 0 }, []string{"lost_updates"}},
	{judging.NotPosted, func(rc DayReconciliation) bool { return rc.Counts.NotPosted > 0 }, []string{"not_posted"}},
	{judging.PostedTwice, func(rc DayReconciliation) bool { return rc.Counts.PostedTwice > 0 }, []string{"posted_twice"}},
	{judging.PostedUnexecuted, func(rc DayReconciliation) bool { return rc.Counts.PostedUnexecuted > 0 }, []string{"posted_unexecuted"}},
}

// FindingKinds are the kinds of the day's findings (DayFinding.Kind),
// worst first, the order the reconciliation lists them in: those of each
// money harm in the order the day's harm is judged (Harm), then the
// contract's.
var FindingKinds = func() []string {
	var kinds []string
	for _, h := range harmKinds {
		kinds = append(kinds, h.kinds...)
	}
	return append(kinds, "mismatched_replays", "unexpected_status", "edits_not_served")
}()

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// WriteHistory writes every attempt as one JSON line (history.jsonl).
func WriteHistory(w io.Writer, attempts []Attempt) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, a := range attempts {
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	return nil
}
