package grader

import (
	"fmt"
	"net/http"
	"time"

	"idemlab/grader/history"
	"idemlab/grader/judging"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
)

// completedWithoutMoney looks at st for a row of key that is completed
// while op has not run. A table without a state column (stages 1–2)
// stores a row only with the money, so its rows count as completed.
func completedWithoutMoney(st labctl.State, key, op string) bool {
	if st.Executions[op] > 0 {
		return false
	}
	for _, row := range judging.KeyRows(st, key) {
		if s, ok := judging.RowState(row); !ok || s == judging.StateCompleted {
			return true
		}
	}
	return false
}

// checkNeverCompletedWithoutMoney catches a key marked completed before the
// money moves (at the claim, or in its own transaction before the business
// write), one marked completed on another connection before the business
// transaction commits (heldCommitNotCompleted), and one marked completed by
// a failed or crashed attempt.
func checkNeverCompletedWithoutMoney(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books

	// While the core call runs, the key may be in progress, never completed.
	req, op, amount := s.Payment(t)
	held, err := t.Hold(req, 300*time.Millisecond)
	if err != nil {
		return err
	}
	sent := req.String() + "\n(the original waits 300ms on the core; /lab/state read while it waits)"
	var caught *labctl.State
	if _, err := t.WaitFor(time.Minute, func() (bool, error) {
		st, err := t.State()
		if err != nil || !completedWithoutMoney(st, req.Key, op) {
			return held.Done(), err
		}
		// Executions only grow: if op has still not run now, it had not
		// run when the key was read as completed.
		again, err := t.State()
		if err == nil && again.Executions[op] == 0 {
			caught = &st
			return true, nil
		}
		return held.Done(), err
	}); err != nil {
		return err
	}
	if caught != nil {
		return t.toldDoneWithoutMoney(sent, "", req, op, *caught,
			"the key in_progress until the transaction that moves the money marks it completed")
	}
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return err
	}
	orig := held.Wait()
	if !orig.Is(http.StatusCreated, "") {
		return t.Fail(sent, orig.String(), "201 Created once the core call returns")
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	st, err := t.State()
	if err != nil {
		return err
	}
	if len(st.Keys) == 0 {
		return t.noKeyRows("whether a key is completed only once its money moved")
	}
	rows := judging.KeyRows(st, req.Key)
	if len(rows) != 1 {
		return t.Fail(sent+"  →  201", "/lab/state: "+judging.DescribeKeyRows(rows), "one row in idempotency_keys for the key")
	}
	if s, ok := judging.RowState(rows[0]); !ok || s != judging.StateCompleted {
		return t.Fail(sent+"  →  201", judging.DescribeKeyRows(rows),
			"the row's state column is \"completed\" once the money moved (from stage 3 on the key table has a state column: in_progress, then completed)")
	}

	heldLooked, err := t.heldCommitNotCompleted(s)
	if err != nil {
		return err
	}

	// A failed and a crashed business write leave no completed key.
	for _, point := range []string{labctl.FailInTransfer, labctl.CrashInTransfer} {
		req, op, _ := s.Payment(t)
		if err := t.Arm(point, 1); err != nil {
			return err
		}
		r := t.Do(req)
		sent := req.String() + "\n(armed: " + point + ", the business write fails before its commit)"
		if r.Is(http.StatusCreated, "") {
			return t.Fail(sent, r.String(), "a 5xx or a dropped connection: the business write did not commit")
		}
		if t.target.Child != nil && r.Err != nil {
			if err := t.Restart(); err != nil {
				return err
			}
		}
		st, err := t.State()
		if err != nil {
			return err
		}
		books.Expect(op)
		if err := reconcileState(t, st, sent, r.Short(), books); err != nil {
			return err
		}
		if completedWithoutMoney(st, req.Key, op) {
			return t.toldDoneWithoutMoney(sent, r.Short()+"\nthen ", req, op, st,
				"no completed key: the attempt failed before its money moved (the key is released, or stays in progress)")
		}
	}
	if err := t.Reconcile("every request above", "", books); err != nil || heldLooked {
		return err
	}
	return t.CouldNotObserve("whether the key shows completed while the COMMIT of its money waits (PostgreSQL): with the held-commit fault armed, the payment's COMMIT was not held within 10s, or its request ended before /lab/state was read; everything else this check tries passed")
}

// heldCommitNotCompleted holds the COMMIT of a payment's business write
// (the held-commit fault) and reads /lab/state while it waits there: the
// key must not show completed yet. A key completed by a statement of its
// own, on another connection, before the business transaction commits
// (on PostgreSQL; on SQLite it waits for the write lock the business
// transaction holds) is a promise made before the money moved: a crash
// or a failed COMMIT at that moment leaves it completed for a payment
// that never happened. looked is false when the commit was not held
// within 10 s or the request ended before the lab read the key: there was
// nothing to see, the check goes on with its other probes, and says at
// the end that it could not observe this one. On SQLite it is not tried
// (looked is true): the wrong version fails before it gets there, and the
// lab's own read of an in-memory database waits for the held COMMIT as
// every reader does, up to the fault's 5 s, to see nothing.
func (t *T) heldCommitNotCompleted(s Scenario) (looked bool, err error) {
	const within = 10 * time.Second
	if st, err := t.State(); err != nil || st.Engine == labdb.SQLite {
		return true, err
	}
	req, op, amount := s.Payment(t)
	if err := t.Arm(labctl.HeldCommit, 1); err != nil {
		return false, err
	}
	// Disarming lets the held COMMIT go, whatever happens here.
	defer t.Arm(labctl.HeldCommit, 0)
	orig := t.Launch(req)
	var st labctl.State
	held, err := t.Fired(within, orig.Done, labctl.HeldCommit)
	if err != nil {
		return false, err
	}
	if held != "" && !orig.Done() {
		if st, err = t.State(); err != nil {
			return false, err
		}
		looked = !orig.Done()
	}
	sent := req.String() + "\n(armed: held-commit, the COMMIT of its business write waits; /lab/state read while it waits)"
	if completedWithoutMoney(st, req.Key, op) {
		return true, t.toldDoneWithoutMoney(sent, "", req, op, st,
			"the key in_progress until the transaction that moves the money commits, and completes it with the money")
	}
	if err := t.Arm(labctl.HeldCommit, 0); err != nil {
		return looked, err
	}
	if r := orig.Wait(); toldRan(r, op) {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	}
	s.Books.Expect(op)
	return looked, nil
}

// toldDoneWithoutMoney is the verdict on req's key caught completed (in
// st, after what got begins with) while its op had not run: money harm,
// whatever the retry hears. From the completion on, the key answers every
// retry "done": a client that retries now is told its money moved when it
// has not, and if the business write failed, or fails later, or the
// process dies, it never will. The check sends that retry, so that the
// finding shows what a client hears.
func (t *T) toldDoneWithoutMoney(sent, got string, req Request, op string, st labctl.State, expected string) error {
	r := t.Do(req)
	got += judging.DescribeKeyRows(judging.KeyRows(st, req.Key)) + ", and op " + op + " has not run\nthen the retry  →  " + r.Short()
	if after, err := t.State(); err == nil && after.Executions[op] == 0 {
		got += ", answered while op " + op + " still had not run"
	}
	harm := judging.Lost
	if r.Is(http.StatusConflict, pDuplicate) {
		harm = judging.ToldDuplicate
	}
	return t.Harmful(harm, sent, got, expected+": a completed key tells every retry that the money moved")
}

// givesUpPatience is how long S3.client-gives-up retries while told to
// wait before it calls the key stuck. A second was not enough on
// PostgreSQL under load: the transaction of an original whose client hung
// up mid-write is rolled back only once the server has cancelled its
// statement, and until then it holds the key's row, which the release
// (and each retry's claim) waits for.
const givesUpPatience = 5 * time.Second

// checkClientGivesUp catches a claim that is not released when the
// client's own context is cancelled: released with the request's context
// (the DELETE fails as the client is gone), or not released at all
// because the failed core call is not treated as a failure before the
// money. It also catches a claim released after the money moved, which
// the retry pays a second time.
func checkClientGivesUp(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	type round struct {
		how     GiveUp
		latency time.Duration
		delay   time.Duration
		says    string
	}
	rounds := []round{{how: MidBody, says: "the client hangs up halfway through the body"}}
	for range 3 {
		rounds = append(rounds, round{how: OnSignal, latency: 200 * time.Millisecond,
			says: "the client hangs up while the original waits on the core (200ms), once its key shows in progress"})
	}
	// Hanging up a random 0–3 ms after the body has gone, with the core
	// answering at once, or around the end of a 20 ms core wait, lands
	// before the claim, inside the business write or just after its
	// commit, depending on the round.
	for range 8 {
		d := time.Duration(t.Rand().Int64N(int64(3 * time.Millisecond)))
		rounds = append(rounds, round{how: AfterSent, delay: d,
			says: fmt.Sprintf("the client hangs up %v after its body has gone (the core answers at once)", d.Round(10*time.Microsecond))})
	}
	for range 4 {
		d := 18*time.Millisecond + time.Duration(t.Rand().Int64N(int64(4*time.Millisecond)))
		rounds = append(rounds, round{how: AfterSent, latency: 20 * time.Millisecond, delay: d,
			says: fmt.Sprintf("the client hangs up %v after its body has gone, around the end of a 20ms core wait", d.Round(10*time.Microsecond))})
	}
	t.Rand().Shuffle(len(rounds), func(i, j int) { rounds[i], rounds[j] = rounds[j], rounds[i] })
	latency := time.Duration(0)
	for _, r := range rounds {
		if r.latency != latency {
			if err := t.Configure(labclient.Config{}.WithCoreLatency(r.latency)); err != nil {
				return err
			}
			latency = r.latency
		}
		req, op, amount := s.Payment(t)
		gone := t.Abandon(req, r.how, r.delay)
		if r.how == OnSignal {
			if _, err := t.WaitFor(r.latency/2, func() (bool, error) {
				st, err := t.State()
				return gone.Done() || judging.KeyInProgress(st, req.Key), err
			}); err != nil {
				return err
			}
			gone.GiveUp()
		}
		first := gone.Wait()
		// The retries need not wait on the core: whatever the original
		// still does, it does at once.
		if latency != 0 {
			if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
				return err
			}
			latency = 0
		}
		// A 409 other than duplicate-request (request-in-progress, or a
		// 409 in any other form) tells the client to wait. The retries
		// are the client's retry policy: a plain-text 409 among them is
		// a contract difference, recorded once (differUntyped).
		asked := fmt.Sprintf("%s\n(%s: it got %s)\nthen the same request again", req.String(), r.says, first.Short())
		wait := func(r Response) bool {
			if untypedConflict(r) {
				t.differUntyped(asked, r, givenUpExpected)
			}
			return r.Err != nil || r.Is(http.StatusConflict, "") && !r.Is(http.StatusConflict, pDuplicate)
		}
		retry, n := t.retryWhile(req, givesUpPatience, wait)
		sent := fmt.Sprintf("%s\n(%s: it got %s)\nthen the same request again, while it is told to wait: %s",
			req.String(), r.says, first.Short(), counted(n, "retry", "retries"))
		if wait(retry) && retry.Err == nil && !first.Is(http.StatusCreated, "") {
			// Still told to wait when it stops: the books first, with its
			// op as it ran, then the key table says which harm
			// (toldToWait), not how often the op ran.
			st, err := t.State()
			if err != nil {
				return err
			}
			ran := st.Executions[op]
			if ran > 0 {
				books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
			} else {
				books.Expect(op)
			}
			got := retry.String() + fmt.Sprintf("\nand %v later, with no request of that key running, /lab/state: op %s %s, and ", givesUpPatience, op, history.Executed(ran))
			if err := t.Reconcile(sent, retry.Short(), books); err != nil {
				return err
			}
			return t.toldToWaitIn(st, req.Key, sent, got, "the retry executes (201), or is told the original did: a client that hung up is not a failure of the money, and its claim is released or completed", waitHarms{
				stuck: "its key is still in progress with nothing running, and every retry is told to wait for good",
				done:  "its key is not in progress, and every retry is still told to wait: the client never learns what became of its transfer",
			})
		}
		// A client told 201 (first or on a retry), another 2xx that names
		// its transfer (an execution or a replay answered 200: its op in
		// the body), or 409
		// duplicate-request (done already), was told its money moved. One
		// told anything else, another operation's answer in a 200 too, was
		// told it did not: its operation must not have run. A 2xx that
		// names another operation is then a wrong answer, even where the
		// books balance: its client takes that result for its own.
		if toldAnyRan(op, first, retry) || retry.Is(http.StatusConflict, pDuplicate) {
			books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		} else {
			books.Expect(op)
		}
		if err := t.Reconcile(sent, retry.Short(), books); err != nil {
			return err
		}
		if other := answerOp(retry); success(retry) && other != "" && other != op {
			return t.Harmful(judging.WrongAnswer, sent, retry.String(),
				"201 Created naming op "+op+" (the retry executes, or from stage 4 the stored answer is replayed); this answer is op "+other+"'s, another operation's, and the client takes it for its own")
		}
		if !retry.Is(http.StatusCreated, "") && !retry.Is(http.StatusConflict, pDuplicate) {
			t.Differ(sent, retry.String(), givenUpExpected)
		}
	}
	return nil
}

// givenUpExpected is what S3.client-gives-up expects a retry to be told
// in the end.
const givenUpExpected = "201 Created (the retry executes, or from stage 4 the stored answer is replayed), or 409 duplicate-request at stage 3"

// checkCompletedWithTheMoney catches a key completed in a transaction of
// its own after the business commit: the key store is made to fail at
// the first key statement after the claim, and the server is crashed
// right after the commit that moved the money.
func checkCompletedWithTheMoney(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books

	// The key store fails once the key is claimed: at the completion, or
	// at whatever else the stage writes to the key table before it.
	req, op, amount := s.Payment(t)
	began := time.Now()
	held, err := t.Hold(req, 100*time.Millisecond)
	if err != nil {
		return err
	}
	if err := t.Arm(labctl.StoreUnavailable, 1); err != nil {
		return err
	}
	first := held.Wait()
	took := time.Since(began)
	if err := t.Arm(labctl.StoreUnavailable, 0); err != nil {
		return err
	}
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return err
	}
	sent := req.String() + "\n(armed once the key is claimed, while the original waits on the core: store-unavailable, the next statement on idempotency_keys fails)"
	// Told that it ran (a 201, or another 2xx naming op): the books
	// expect it once.
	executed := toldRan(first, op)
	if executed {
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	} else {
		books.Expect(op)
	}
	if err := t.Reconcile(sent, first.Short(), books); err != nil {
		return err
	}
	const executesOnce = "the retry executes once, or is told the first attempt did: nothing runs any more"
	retry, n := t.retryUntilAnswered(req, time.Second, sent+"  →  "+first.Short(), executesOnce)
	story := fmt.Sprintf("%s  →  %s\nthen the same request again, while it is told to wait or gets no answer: %s", sent, first.Short(), counted(n, "retry", "retries"))
	// Once the retry has answered, a server that keeps its keys where the
	// lab can see them shows one. One that shows none cannot be caught
	// failing here: the check goes on to the crash, and says so at the end.
	var unseen error
	if visible, err := t.keyRowsVisible(); err != nil {
		return err
	} else if !visible {
		unseen = t.noKeyRows("whether a store failure at the completion, or a crash right after the commit, leaves the key as the money is")
	}
	if !executed && toldRan(retry, op) {
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	}
	if err := t.Reconcile(story, retry.Short(), books); err != nil {
		return err
	}
	if toldToComeBack(retry) {
		// The key table says which harm that is: a key still in progress
		// when nothing runs is held for good (toldToWait).
		stuck := "the key says something runs, for good"
		if lockedOut(took, first, retry) {
			stuck += fmt.Sprintf(". The first attempt took %v: the release waited on a write lock: is it run while your own transaction is still open?",
				took.Round(10*time.Millisecond))
		}
		return t.toldToWait(req.Key, story, retry, executesOnce, waitHarms{
			stuck: stuck,
			done:  "its key is not in progress, and every retry is still told to wait: the client never learns what became of its transfer",
		})
	}
	if !executed && !retry.Is(http.StatusCreated, "") {
		return t.Fail(story, retry.String(), "201 Created: the first attempt moved nothing, so the retry executes")
	}

	// A crash right after the commit that moved the money.
	req, op, amount = s.Payment(t)
	if err := t.Arm(labctl.CrashAfterCommit, 1); err != nil {
		return err
	}
	r := t.Do(req)
	sent = req.String() + "\n(armed: crash-after-commit, the server dies right after the commit that moves the money)"
	if t.target.Child != nil {
		if err := t.Restart(); err != nil {
			return err
		}
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	st, err := t.State()
	if err != nil {
		return err
	}
	if err := reconcileState(t, st, sent, r.Short(), books); err != nil {
		return err
	}
	rows := judging.KeyRows(st, req.Key)
	if len(rows) == 1 {
		if s, ok := judging.RowState(rows[0]); ok && s == judging.StateInProgress {
			return t.Harmful(judging.StuckKey, sent, r.Short()+"\nthen /lab/state: op "+op+" executed once, and "+judging.DescribeKeyRows(rows),
				"the key completed by the very commit that moved the money: no request is running, and every retry is told to wait for good (and once stuck keys are taken over, stage 6, the retry pays again)")
		}
	}
	again := t.Do(req)
	story = sent + "  →  " + r.Short() + "\nthen the retry, the same request"
	if err := t.Reconcile(story, again.Short(), books); err != nil {
		return err
	}
	if len(rows) != 1 && unseen == nil {
		return t.Fail(story, again.String()+"\nthen /lab/state: "+judging.DescribeKeyRows(rows), "one completed row for the key: the money moved")
	}
	if err := commitAnswerLost(t, s); err != nil {
		return err
	}
	return unseen
}

// commitAnswerLost lets the commit that moves the money go through and
// tells the server it failed (commit-answer-lost), as a connection that
// drops between the database's commit and its answer does: the key was
// completed by that commit, and nothing may give it back. A release that
// deletes the key whatever its state hands it to a retry that pays again.
func commitAnswerLost(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	req, op, amount := s.Payment(t)
	first, err := t.doArmed(labctl.CommitAnswerLost, req)
	if err != nil {
		return err
	}
	sent := req.String() + "\n(armed: commit-answer-lost, the commit that moves the money goes through, and the server is told it failed)"
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	if err := t.Reconcile(sent, first.Short(), books); err != nil {
		return err
	}
	completed := "409 " + pDuplicate + " (stage 3) or the stored 201 (stage 4 on): the money moved, and its commit completed the key"
	retry, n := t.retryUntilAnswered(req, time.Second, sent+"  →  "+first.Short(), completed)
	story := fmt.Sprintf("%s  →  %s\nthen the same request again, while it is told to wait or gets no answer: %s", sent, first.Short(), counted(n, "retry", "retries"))
	if err := t.Reconcile(story, retry.Short(), books); err != nil {
		return err
	}
	if toldToComeBack(retry) {
		return t.stillInProgress(req.Key, story, retry, completed)
	}
	return nil
}
