package grader

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
)

// checkSequentialRetry catches a server without a claim (stage 0) and a
// claim that does not stop the retry: INSERT OR IGNORE or an upsert whose
// result is never read, a key stored but never looked at. It also reads
// what each retry is told, for two payments: an ordinary one, and one of
// more than half what its account holds, which run again would be refused
// for insufficient funds. A retry whose original executed is told so (409
// duplicate-request, or the stored 201): one refused as another request,
// told to wait, or refused for the funds its own original spent (a claim
// made after the business write) leaves its client unable to learn that
// its money moved.
func checkSequentialRetry(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	req, op, amount := s.Payment(t)
	if err := retryAfterAnswer(t, books, req, op, a.Accounts[0], b.Accounts[0], amount, ""); err != nil {
		return err
	}
	from := a.Accounts[1]
	held := books.Balances[from]
	amount, op = t.Amount(held/2+1, held), t.Op()
	req = Transfer(a, t.Key(), TransferBody(from, b.Accounts[0], amount, op))
	return retryAfterAnswer(t, books, req, op, from, b.Accounts[0], amount,
		"  (more than half of what its account holds: run again, it would be refused for insufficient funds)")
}

// retryAfterAnswer sends req, a transfer of amount from from to to as op,
// which must execute, then 1 to 3 retries of it, each of which must neither
// execute nor fail, and must be told that the original executed.
func retryAfterAnswer(t *T, books *judging.Books, req Request, op, from, to string, amount int64, what string) error {
	first := t.Do(req)
	if !first.Is(http.StatusCreated, "") {
		return t.Fail(req.String()+what, first.String(), "201 Created: the first request with a fresh key executes")
	}
	books.Transfer(op, from, to, amount)
	retries := 1 + t.Rand().IntN(3)
	story := []string{req.String() + what + "  →  " + first.Short()}
	const told = "409 duplicate-request (stages 1–3) or the stored 201 (stage 4 on)"
	differed := false
	for i := range retries {
		r := t.Do(req)
		asked := strings.Join(story, "\n") + fmt.Sprintf("\nretry %d, the same request", i+1)
		story = append(story, fmt.Sprintf("retry %d, the same request  →  %s", i+1, r.Short()))
		// Told to wait, the client comes back, as the retry policy says:
		// a retry that arrives just as its key completes is rightly told
		// so once. What it is told in the end is what it knows.
		r, waited := t.untilAnswered(req, r, asked, told+": the original executed, and the retry is told so")
		story[len(story)-1] += waited
		sent := strings.Join(story, "\n")
		if r.ServerFailed() {
			return because(t.Fail(sent, r.String(), "an answer that is not a 5xx: "+told+"; the retry must not execute"),
				"the client retried to learn what became of its payment, and a 5xx tells it nothing: it cannot tell whether the money moved, so it retries until it gives up, or asks a person, about a payment that was in fact made")
		}
		if err := t.Reconcile(sent, "", books); err != nil {
			return err
		}
		if r.Is(http.StatusConflict, pDuplicate) || sameOp(first, r) {
			continue
		}
		if toldItRan(first, r) {
			// Its own operation, in another success status: the client
			// learns that its money moved.
			if !differed {
				t.Differ(sent, r.String(), told+": the original executed, and the retry is told so, with the original's status")
			}
			differed = true
			continue
		}
		if toldToComeBack(r) {
			return because(t.stillInProgress(req.Key, sent, r, told+": the original executed, and the retry is told so"),
				"the client retried because it never saw the first answer, and was told to wait as long as it retried: it never learns that its money moved, and may pay again under a new key")
		}
		return because(t.Harmful(judging.NoUsableAnswer, sent, r.String(),
			told+": the original executed, and the retry is told so"),
			"the client retried because it never saw the first answer, and the retry's answer is the only one it gets: told to wait, told its key names another request, or refused for the funds its own original spent, it never learns that its money moved, and may pay again under a new key")
	}
	return nil
}

// checkRetriesAroundAFailure is S1.retry-after-failure: the retry sent
// once a failed request has answered executes (checkRetryAfterFailure),
// and so does one sent while the original still waits on the core and is
// about to fail (retryWhileTheOriginalFails); the retry of a refused
// transfer is refused again, not told it ran (retryAfterRefusal).
func checkRetriesAroundAFailure(t *T, s Scenario) error {
	return unseenLast(
		func() error { return checkRetryAfterFailure(t, s) },
		func() error {
			for range failingOriginalTries {
				if err := retryWhileTheOriginalFails(t, s); err != nil {
					return err
				}
			}
			return nil
		},
		func() error { return retryAfterRefusal(t, s) },
	)
}

// retryAfterRefusal sends a transfer of more than its account ever held,
// refused (422 insufficient-funds) inside the business write, after the
// claim, and retries it: a refusal moved nothing, so it spent no key. The
// retry is refused again: it runs again (stages 1–3) or gets the stored
// refusal (stage 4 on). A server that keeps the key of a refusal as
// "used" tells the retry 409 duplicate-request, "the first request was
// executed", for a payment that never happened. From stage 3 on, a kept
// key says in progress instead; S3.release-after-failure judges that.
func retryAfterRefusal(t *T, s Scenario) error {
	req, sent, first, err := sendRefused(t, s)
	if err != nil {
		return err
	}
	books := s.Books
	retry := t.Do(req)
	story := sent + "  →  " + first.Short() + "\nthen the retry, the same request  →  " + retry.Short()
	if err := t.Reconcile(story, retry.Short(), books); err != nil {
		return err
	}
	expected := "422 " + pInsufficient + " again: the refusal moved nothing, so its key is not spent, and the retry runs and is refused again (stages 1–3) or gets the stored refusal (stage 4 on)"
	switch {
	case retry.Is(http.StatusUnprocessableEntity, pInsufficient):
		return nil
	case retry.Is(http.StatusConflict, pDuplicate):
		return t.toldDuplicate(story, retry.String(), expected)
	case retry.Is(http.StatusConflict, pInProgress) && t.Subject().Stage >= 3:
		return nil
	}
	return t.Fail(story, retry.String(), expected)
}

// sendRefused sends a transfer of more than its account ever held, which
// the business write refuses (422 insufficient-funds) after the claim, and
// checks that it moved nothing and was refused. It returns the request,
// what was sent and its answer, for the retries that follow.
func sendRefused(t *T, s Scenario) (req Request, sent string, first Response, err error) {
	a, b, books := s.A, s.B, s.Books
	amount, op := s.Opening+t.Amount(1, 50_000), t.Op()
	req = Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
	first = t.Do(req)
	sent = fmt.Sprintf("%s  (the account holds at most %d)", req.String(), s.Opening)
	books.Expect(op)
	if err := t.Reconcile(sent, first.Short(), books); err != nil {
		return req, sent, first, err
	}
	if !first.Is(http.StatusUnprocessableEntity, pInsufficient) {
		return req, sent, first, t.Fail(sent, first.String(), "422 "+pInsufficient)
	}
	return req, sent, first, nil
}

// failingOriginalTries is how many payments retryWhileTheOriginalFails
// makes: on PostgreSQL a loaded machine can delay the original's claim
// past the check's wait (a new connection), and the retry then claims
// first, so that the roles swap and the failure it looks for does not
// happen.
const failingOriginalTries = 3

// retryWhileTheOriginalFails sends a retry while its original waits on the
// core, then lets the original's business write fail (fail-in-transfer).
// A claim committed on its own before the core call, and given back when
// the request fails, tells that retry "already executed" for a payment
// that then never runs. The retry must execute, or be told to come back
// (409 request-in-progress) and execute when it does. It is sent as soon
// as the original's key has a row (a claim committed before the core
// call), or after half the original's core wait (a claim made with the
// money shows no row before).
func retryWhileTheOriginalFails(t *T, s Scenario) error {
	const latency = 300 * time.Millisecond
	a, b, books := s.A, s.B, s.Books
	req, op, amount := s.Payment(t)
	if err := t.Arm(labctl.FailInTransfer, 1); err != nil {
		return err
	}
	if err := t.Configure(labclient.Config{CoreLatency: latency}); err != nil {
		return err
	}
	pending := t.Launch(req)
	if _, err := t.WaitFor(latency/2, func() (bool, error) {
		if pending.Done() {
			return true, nil
		}
		st, err := t.State()
		return len(judging.KeyRows(st, req.Key)) > 0, err
	}); err != nil {
		return err
	}
	retry := t.Do(req)
	orig := pending.Wait()
	if err := t.Arm(labctl.FailInTransfer, 0); err != nil {
		return err
	}
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return err
	}
	sent := fmt.Sprintf("%s\n(armed: fail-in-transfer; the original waits %v on the core, then its business write fails)\n"+
		"then, while the original waits on the core, the same request again", req.String(), latency)
	got := "the original answered " + orig.Short() + ", the retry " + retry.Short()
	const executes = "201 Created: the original failed and moved nothing, so the retry executes (at once, or once it is told to come back and does)"
	// The retries are the client's retry policy: a plain-text 409 is a
	// contract difference, recorded once, and tells the client to come
	// back as a 409 request-in-progress does.
	asked := sent + "\n→  " + got
	wait := func(r Response) bool {
		if untypedConflict(r) {
			t.differUntyped(asked, r, executes)
		}
		return r.Err != nil || r.ServerFailed() || toldToComeBack(r)
	}
	last := retry
	if wait(retry) {
		var n int
		last, n = t.retryWhile(req, time.Second, wait)
		got += fmt.Sprintf("\nthen %d retries, while it is told to wait or failed  →  %s", n, last.Short())
	}
	ran := toldAnyRan(op, orig, retry, last)
	if ran {
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	} else {
		books.Expect(op)
	}
	if err := t.Reconcile(sent, got, books); err != nil {
		return err
	}
	duplicate := func(r Response) bool { return r.Is(http.StatusConflict, pDuplicate) }
	switch {
	case !ran && (duplicate(orig) || duplicate(retry) || duplicate(last)):
		return t.toldDuplicate(sent, got, executes)
	case ran && duplicate(last):
		return nil
	case ran && toldRan(last, op):
		if !last.Is(http.StatusCreated, "") {
			// Told it ran in another 2xx, the books agreeing: a contract
			// difference, and the next payments and the refusal's
			// retry still run.
			t.Differ(sent, got, executes)
		}
		return nil
	case toldToComeBack(last):
		// Still told to wait when it stops: the key table says which
		// harm.
		return t.toldToWait(req.Key, sent+"\n→  "+got, last, executes, endedWaitHarms)
	}
	return t.Fail(sent, got, executes)
}

// checkReplicas catches a claim kept in a process's memory (a map or a
// mutex standing in for the UNIQUE constraint): it holds against retries
// that reach the same process, and the second process knows nothing of it.
// The server runs as two processes on one database; the retry of a request
// answered by one goes to the other, then a burst is spread over both.
func checkReplicas(t *T) error {
	const opening, n = 1_000_000, 16
	rt, s, err := t.twoServers(opening)
	if err != nil {
		return err
	}
	a, b, books := s.A, s.B, s.Books
	req, op, amount := s.Payment(rt)
	first := rt.Do(req)
	if !first.Is(http.StatusCreated, "") {
		return rt.Fail("replica 1: "+req.String(), first.String(), "201 Created: the first request with a fresh key executes")
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	retry := req
	retry.Replica = 1
	second := rt.Do(retry)
	sent := "replica 1: " + req.String() + "  →  " + first.Short() + "\nreplica 2: the same request again"
	if err := rt.Reconcile(sent, second.String(), books); err != nil {
		return err
	}
	if second.ServerFailed() {
		rt.Differ(sent, second.String(), "an answer that is not a 5xx, and no second execution: the key is in the database both processes share")
	}
	amount = rt.Amount(1_000, 20_000)
	key, op := rt.Key(), rt.Op()
	req = Transfer(a, key, TransferBody(a.Accounts[1], b.Accounts[0], amount, op))
	rs := rt.Simultaneously(n, func(i int) Request { r := req; r.Replica = i % 2; return r })
	sent = fmt.Sprintf("%d× at once, behind a barrier, every other one to replica 2: %s", n, req.String())
	return rt.racedOnce(sent, Summarize(rs), rs, op, books, func() { books.Transfer(op, a.Accounts[1], b.Accounts[0], amount) })
}

// checkConcurrentDuplicates catches check-then-insert (two requests both
// find no key before either inserts; with a core wait between the check
// and the insert the window is wide), INSERT OR IGNORE without reading the
// rows affected, and a lost race answered with a 5xx because the unique
// violation was not told apart from other errors.
func checkConcurrentDuplicates(t *T, s Scenario) error {
	const n, rounds = 32, 3
	a, b, books := s.A, s.B, s.Books
	// A short core wait lines the racers up between the validation and the
	// write, as a slow core banking system does in production.
	if err := t.Configure(labclient.Config{CoreLatency: 50 * time.Millisecond}); err != nil {
		return err
	}
	for round := range rounds {
		from := a.Accounts[round%2]
		amount := t.Amount(1_000, 20_000)
		key, op := t.Key(), t.Op()
		req := Transfer(a, key, TransferBody(from, b.Accounts[0], amount, op))
		rs := t.Simultaneously(n, func(int) Request { return req })
		sent := fmt.Sprintf("%d× at once, behind a barrier (round %d of %d): %s", n, round+1, rounds, req.String())
		got := Summarize(rs)
		if err := t.racedOnce(sent, got, rs, op, books, func() { books.Transfer(op, from, b.Accounts[0], amount) }); err != nil {
			return err
		}
	}
	return nil
}

// racedOnce judges the answers rs to one request sent many times under
// one key: the money first (the operation ran once if a client was told
// 201, or another 2xx naming op; never if every client was refused; at most once if some got no
// answer or a 5xx, which tells nothing), then the contract (no 5xx, and
// one 201), recorded so that the check goes on to its next round. record
// books the operation's one execution.
func (t *T) racedOnce(sent, got string, rs []Response, op string, books *judging.Books, record func()) error {
	created, failed := 0, false
	for _, r := range rs {
		failed = failed || r.ServerFailed()
		if r.Is(http.StatusCreated, "") {
			created++
		}
	}
	switch {
	case toldAnyRan(op, rs...):
		// Told that it ran (a 201, or another 2xx naming op): the books
		// expect it once, whatever the status.
		record()
	case !failed:
		books.Expect(op)
	}
	if err := t.Reconcile(sent, got, books); err != nil {
		return err
	}
	if created == 0 {
		t.Differ(sent, got, "one request executes and gets 201 Created")
	}
	if failed {
		t.Differ(sent, got, "no 5xx and no dropped connection: one 201, and for the others 409 (duplicate-request or request-in-progress) or the stored 201")
	}
	return nil
}

// checkStaggeredDuplicates catches a claim with a gap that a barrier
// burst does not meet: a check whose read is outside the claim's
// transaction, a key recorded only after the money committed, a guard
// held in memory and released before the key is stored. Most rounds run
// with no core latency, so the original's work takes a millisecond or so
// and the gaps land before, inside and after it; the others hold the
// original on the core for longer than the first gaps. Every request of
// a round spells the key alike: a server that reads the two spellings as
// two keys fails S1.key-forms, not this check.
func checkStaggeredDuplicates(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	type shape struct {
		latency time.Duration
		most    time.Duration
	}
	rounds := []shape{{0, 3 * time.Millisecond}, {0, time.Millisecond}, {40 * time.Millisecond, 6 * time.Millisecond},
		{0, 3 * time.Millisecond}, {0, 2 * time.Millisecond}, {40 * time.Millisecond, 4 * time.Millisecond},
		{0, 3 * time.Millisecond}, {0, time.Millisecond}}
	for round, sh := range rounds {
		if err := t.Configure(labclient.Config{}.WithCoreLatency(sh.latency)); err != nil {
			return err
		}
		from := a.Accounts[round%2]
		amount := t.Amount(1_000, 20_000)
		key, op := t.Key(), t.Op()
		req := Transfer(a, key, TransferBody(from, b.Accounts[0], amount, op))
		n := 8 + t.Rand().IntN(9)
		gaps := t.gaps(n, sh.most)
		// One spelling of the key per round, drawn from the seed: this
		// check is about the race, and S1.key-forms about the spellings.
		req.Quote = t.Rand().IntN(2) == 0
		rs := t.Staggered(gaps, func(int) Request { return req })
		core := "the core answering at once"
		if sh.latency > 0 {
			core = fmt.Sprintf("the core answering after %v", sh.latency)
		}
		sent := fmt.Sprintf("%d× the same request, one after another, %s (%s; round %d of %d): %s",
			n, apart(gaps), core, round+1, len(rounds), req.String())
		got := Summarize(rs)
		if err := t.racedOnce(sent, got, rs, op, books, func() { books.Transfer(op, from, b.Accounts[0], amount) }); err != nil {
			return err
		}
	}
	return nil
}

// checkMissingKey catches a server that treats the key as optional and
// executes a request without one (stage 0 does), and one that reads the
// key only after the call to the core: the core has then been called for a
// request that is refused, a side effect no rollback undoes, which the lab
// counts by op.
func checkMissingKey(t *T, s Scenario) error {
	a, b := s.A, s.B
	transferAmount, transferOp := t.Amount(1, 100_000), t.Op()
	depositAmount, depositOp := t.Amount(1, 100_000), t.Op()
	reqs := []struct {
		req Request
		op  string
	}{
		{Transfer(a, "", TransferBody(a.Accounts[0], b.Accounts[0], transferAmount, transferOp)), transferOp},
		{Deposit(a, "", DepositBody(a.Accounts[1], depositAmount, depositOp)), depositOp},
	}
	for _, r := range reqs {
		before, err := t.Snapshot()
		if err != nil {
			return err
		}
		res := t.Do(r.req)
		sent := r.req.String() + "  (no Idempotency-Key header)"
		refused := res.Is(http.StatusBadRequest, pMissingKey)
		if err := t.refusedUnchanged(before, sent, res, refused, "400 "+pMissingKey); err != nil {
			return err
		}
		if !refused {
			continue
		}
		st, err := t.State()
		if err != nil {
			return err
		}
		if st.CoreCalls[r.op] > 0 {
			t.Differ(sent, res.Short()+", after the request had called the core",
				"400 "+pMissingKey+" before the call to the core: the key is read first, and a request without one makes no call a rollback cannot undo")
		}
	}
	return nil
}

// refusedUnchanged records a request that must be refused with expected as one
// contract difference: its answer, if it was not that refusal (refused
// false), with what it changed, if it changed anything (unchanged's
// finding). A money finding, or an error, it returns.
func (t *T) refusedUnchanged(before judging.Snapshot, sent string, res Response, refused bool, expected string) error {
	changed := t.unchanged(before, sent, res)
	var f *judging.Failure
	if changed != nil && (!errors.As(changed, &f) || f.Harm != "") {
		return changed
	}
	switch {
	case refused:
		return t.note(changed)
	case f == nil:
		t.Differ(sent, res.String(), expected)
	default:
		t.Differ(sent, res.String()+"\n"+f.Got, expected+"; "+f.Expected)
	}
	return nil
}

// unchanged fails when the target's snapshot differs from before: a
// request that must be refused moved money or ran an op, or left a key row
// behind (a contract difference: the key is spent on a request that never
// ran). Money that moved is harm only if the client was refused: told it
// moved (a 2xx), the client knows what happened, and the server differs
// from the contract by accepting what it should have refused.
func (t *T) unchanged(before judging.Snapshot, sent string, res Response) error {
	after, err := t.Snapshot()
	if err != nil {
		return err
	}
	d := before.Diff(after)
	if d == "" {
		return nil
	}
	const expected = "the refusal changes nothing: no money moves and no key row is stored"
	keysOnly := judging.Snapshot{Balances: before.Balances, Executions: before.Executions, Keys: after.Keys}
	if before.Diff(keysOnly) == d || res.Err == nil && res.Status >= 200 && res.Status < 300 {
		return t.Fail(sent, res.Short()+", and "+d, expected)
	}
	return t.Harmful(judging.MovedThoughRefused, sent, res.Short()+", and "+d, expected)
}

// expecting puts answer, the one a request was due, before what the
// failure err expected of it (unchanged's "the refusal changes nothing"),
// so that it says what should have come back as well as what should not
// have moved. Any other err is returned as it is.
func expecting(answer string, err error) error {
	var f *judging.Failure
	if errors.As(err, &f) {
		f.Expected = answer + "; " + f.Expected
	}
	return err
}

// keysElsewhere tells, after a store-unavailable fault that no statement
// of req (executed as op) reached, a server that keeps its keys where the
// fault cannot reach from one that keeps none: it sends req again. If op
// executes again, there is no key store to fail, and verdict (what the
// check saw, nil if nothing) stands; if not, the keys are elsewhere, and
// the check could not observe them (unseen).
func (t *T) keysElsewhere(unseen, verdict error, req Request, op string) error {
	t.Do(req)
	st, err := t.State()
	if err != nil {
		return err
	}
	if st.Executions[op] > 1 {
		// The retry's execution is the check's own doing: allowed.
		t.NewBooks(0).Executions[op] = st.Executions[op]
		return verdict
	}
	return unseen
}
