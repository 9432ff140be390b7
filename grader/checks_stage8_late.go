package grader

import (
	"fmt"
	"net/http"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/fault"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
)

// checkLateOriginal catches a refusal stored without the lease: the
// original of a payment outlives its lease on the core, its retry takes
// the key over and pays the invoice, and the original, waking up, finds
// the reference held (by its own retry's transfer) and stores 409
// duplicate-reference over the retry's 201. Every later retry of the key
// is then told that its payment is a duplicate of itself.
func checkLateOriginal(t *T) error {
	return t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
		lease := t.drawLease(5, 60)
		if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
			return false, err
		}
		inv := t.invoiceOf(s)
		s.Books.Expect(inv.op)
		req := Transfer(inv.payer, inv.firstKey, inv.body(inv.amount))
		// The original's lease expires while it waits on the core. Its
		// client's retry takes the key over, finds the core quick again,
		// and pays the invoice while the original still waits.
		late, held, err := t.retryBeforeLateOriginal(req, latency, lease)
		if !held || err != nil {
			return err != nil, err
		}
		retry, first, last, tookOver := late.retry, late.first, late.last, late.tookOver
		sent := fmt.Sprintf("(lease %v)\n%s  (the original, paying invoice %s, waiting %v on the core)\n"+
			"while it waits: %v of lab time (its lease expires), and the retry, the core quick again  →  %s\n"+
			"the original wakes up and answers  %s\n"+
			"then one more retry  →  %s",
			lease, req.String(), inv.reference, latency, lease+time.Second, retry.Short(), first.Short(), last.Short())
		got := "the retry " + retry.Short() + "; the original " + first.Short() + "; the last retry " + last.Short()
		// One operation, asked for once: a 201 to any attempt, or another
		// 2xx naming its op, means the books expect it to have run once.
		if toldAnyRan(inv.op, first, retry, last) {
			s.Books.Transfer(inv.op, inv.from, inv.to, inv.amount)
		}
		if err := t.Reconcile(sent, got, s.Books); err != nil {
			return true, err
		}
		// Two 201s naming one transfer: the retry replayed the original's,
		// which executed first, or the late original, refused a
		// completion, read its key's row and answered the retry's. The
		// lab's execution events say which attempt paid.
		retryPaid := sameTold(inv.op, first, retry) && tookOver && t.overtaken(inv.op)
		conclusive, harm, want, differs := lateRefusalVerdict(inv.op, first, retry, last, tookOver, retryPaid)
		if conclusive && toldRan(retry, inv.op) && !retry.Is(http.StatusCreated, "") {
			// Told it ran in another 2xx: a contract difference; the
			// verdict compared the last retry with what the retry was told.
			t.Differ(sent, got, lateRetryPays)
		}
		lastAgain := func(d string) string {
			return got + "\nthe last retry: " + last.String() + ", Location " + fmt.Sprintf("%q", last.Header.Get("Location")) + "\ncompared with the retry's " + retry.Short() + ": " + d
		}
		if differs != "" {
			// The same value in another 2xx: its client learns that its
			// payment ran, a difference of contract; the check goes on.
			t.Differ(sent, lastAgain(differs), lateRetryStored(retry))
		}
		if want != "" {
			if d := replayValueMismatch(retry, last, "the retry's"); d != "" {
				got = lastAgain(d)
			}
			return true, t.Harmful(harm, sent, got, want)
		}
		return conclusive, nil
	})
}

// lateRetryPays is what S8.late-original expects of the retry that took
// the key over.
const lateRetryPays = "201 Created to the retry: the original's lease had expired, so the retry takes the key over and pays the invoice"

// lateRefusalVerdict judges S8.late-original's round from its answers:
// the original's (first), the retry's that took its key over (retry) and
// the one more retry's, sent after both had answered (last); tookOver
// says the original was still waiting when the retry was answered, and
// retryPaid that the lab's execution events name the retry's attempt, not
// the original's, as the one that paid (the check asks them only when
// the original and the retry were told one transfer ran). It reports whether the round
// observed a late original, and, if it failed, what the failure did and
// what was expected. The books are reconciled before: one transfer for
// the payment, however many answers named one. An answer is read for
// what it told its client (toldRan, op being the payment's): a retry told
// it ran in another 2xx than 201 is a contract difference the caller
// records, and the last retry is compared with what the retry was told.
// A last retry told the retry's value in another 2xx (201 for its 200,
// or 200 for its 201) is a contract difference, not the finding: its
// client learns that its payment ran. The verdict cannot record it, so it
// returns it (differs, "" if none) for its caller to record, and goes on
// to the original's answer.
func lateRefusalVerdict(op string, first, retry, last Response, tookOver, retryPaid bool) (conclusive bool, harm judging.Harm, want, differs string) {
	if sameTold(op, first, retry) && !(tookOver && retryPaid) {
		// The original executed, and the retry replayed its answer (or
		// the events cannot tell who paid): no late original in this round.
		return false, "", "", ""
	}
	if !toldRan(retry, op) {
		return true, "", lateRetryPays, ""
	}
	if d := replayValueMismatch(retry, last, "the retry's"); d != "" {
		inItsStatus := last
		if success(last) {
			inItsStatus.Status = retry.Status
		}
		if replayValueMismatch(retry, inItsStatus, "the retry's") != "" {
			return true, replayHarm(retry, last), lateRetryStored(retry), ""
		}
		differs = d
	}
	// The late original, answered with the retry's 201 (read from its
	// key's row once its completion failed), is told the truth.
	if !sameTold(op, first, retry) && !first.Is(http.StatusConflict, pInProgress) && !first.ServerFailed() {
		return true, judging.WrongAnswer, "409 " + pInProgress + " to the original, whose lease a retry took over (or the retry's own 201): " +
			"its payment executed, by the retry's transfer, so no answer may tell its client it was refused", differs
	}
	return tookOver, "", "", differs
}

// lateRetryStored is what S8.late-original expects every retry after
// retry, the one that took the key over and paid, to be told.
func lateRetryStored(retry Response) string {
	return fmt.Sprintf("the retry's stored %d again (the same JSON value) to every later retry: the payment executed once, by the retry's transfer. ", retry.Status) +
		"The original, late, found the reference held by that transfer; its refusal is a completion like any other, and with its lease taken over it stores nothing"
}

// checkAfterRestart catches references kept anywhere but the database (a
// map in the server's memory, say): one process decides one payment per
// invoice, but when it ends (a deploy, a crash) the references go with
// it, and the invoice it knew paid is paid again. It needs a server it
// can restart: a child process.
func checkAfterRestart(t *T) error {
	c, err := t.OnChild()
	if err != nil {
		return err
	}
	s, inv, story, err := c.paidInvoice(2)
	if err != nil {
		return err
	}
	if err := c.Restart(); err != nil {
		return err
	}
	story += "\n(the server restarts: its process is killed and started again on the same database)"
	_, _, err = c.payAgain(story, "the invoice paid again under a new key", inv, c.Key(), inv.amount, s.Books)
	return err
}

// checkReferenceWriteFails catches a reference insert whose error is
// looked at only for a unique violation and otherwise dropped: when the
// database refuses to hold the reference, the transfer commits without
// it, its client is told 201, and the invoice can be paid again, under
// any key. The fault refuses the insert in the connection, before the
// engine sees it, so that the transaction could still commit on either
// engine. The payment must fail instead and move nothing, and its retry
// with the same key pay the invoice and hold it: a payment under a new
// key then gets 409 duplicate-reference with the Location of the retry's
// transfer. A server that holds no reference at all (stage 8's scaffold)
// pays the invoice again too, with nothing refused: its failure says the
// fault did not fire, and why it paid again.
func checkReferenceWriteFails(t *T) error {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	inv := t.invoiceOf(s)
	s.Books.Expect(inv.op)
	if err := t.Arm(labctl.FailReferenceWrite, 1); err != nil {
		return err
	}
	req := Transfer(inv.payer, inv.firstKey, inv.body(inv.amount))
	final := t.Do(req)
	left, err := t.Lab().Armed(t.ctx)
	if err != nil {
		return err
	}
	fired := left[labctl.FailReferenceWrite] == 0
	if err := t.Arm(labctl.FailReferenceWrite, 0); err != nil {
		return err
	}
	what := "it refused the transfer's reference"
	if !fired {
		what = "it did not fire: no statement inserted into " + fault.ReferenceTable
	}
	story := fmt.Sprintf("invoice %s paid: %s\n(armed: %s: the database refuses the next insert into %s; %s)  →  %s",
		inv.reference, req.String(), labctl.FailReferenceWrite, fault.ReferenceTable, what, final.Short())
	expected := "201 Created: the attempt whose reference was refused failed and moved nothing, its claim released (stage 3), and the retry pays the invoice"
	if !fired {
		// Nothing was refused: the attempt and its retries failed of
		// something else, which the story shows.
		expected = "201 Created: the fault refused nothing (no statement inserted into " + fault.ReferenceTable + "), so nothing stood in the payment's way: the payment, or its retry, pays the invoice"
	}
	if !toldRan(final, inv.op) {
		// Money first: the attempt that failed must have moved nothing.
		// One told that it ran (a 201, or another 2xx naming its op) is
		// not sent again.
		if err := t.Reconcile(story, final.String(), s.Books); err != nil {
			return err
		}
		lease, err := t.lease()
		if err != nil {
			return err
		}
		var retries string
		if final, retries, err = t.retryUntilDone(req, lease, story, expected); err != nil {
			return err
		}
		story += "\nthe client retries the same request" + retries
	}
	if !toldRan(final, inv.op) {
		if err := t.Reconcile(story, final.String(), s.Books); err != nil {
			return err
		}
		return t.Fail(story, final.String(), expected)
	}
	if !final.Is(http.StatusCreated, "") || resourceID(final) == "" {
		// Told that it ran in another 2xx, or in a 201 whose body names
		// no transfer: a contract difference, and the invoice is paid,
		// for the payment under a new key that must find its reference
		// held (compared with the transfer the answer named, if any).
		t.Differ(story, final.String(), expected)
	}
	s.Books.Transfer(inv.op, inv.from, inv.to, inv.amount)
	inv.firstID = answerID(final)
	if inv.firstID != "" {
		story += ", " + inv.firstID
	}
	if _, _, err := t.payAgain(story, "another clerk pays it again, under a new key", inv, t.Key(), inv.amount, s.Books); err != nil {
		if !fired {
			// Nothing was refused: the finding is not the one the check
			// is for, and its why would send the student after an error
			// no statement had.
			return because(err, "no statement inserted into "+fault.ReferenceTable+", so the fault refused nothing: the invoice was paid again under a new key because its reference was never held (S8.two-keys); a transfer holds its reference with an insert into "+fault.ReferenceTable+", in the transaction that moves the money")
		}
		return err
	}
	if !fired {
		return t.CouldNotObserve("a refused reference: the invoice was paid with the %s fault armed, and no statement the server ran matched an INSERT into %s (the fault knows INSERT, INSERT OR …, REPLACE INTO and MERGE … THEN INSERT; a reference held another way, or in another table, is not refused), so what a payment does when its reference cannot be held is unknown",
			labctl.FailReferenceWrite, fault.ReferenceTable)
	}
	return nil
}
