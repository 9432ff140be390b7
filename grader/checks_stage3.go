package grader

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/fault"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/sqlitedb"
)

// checkRetryDuringOriginal catches a claim made only in the business
// transaction, after the core wait (stages 1–2: the retry waits and then
// gets duplicate-request), a key marked completed before the money moves
// (the retry hears "done" while the original still runs), a lost race
// answered with a 5xx, and a lock that outlives its request (every retry
// after the original answered is still told to wait). An answer other than
// the contract's 409 is recorded, and the check goes on to the money.
func checkRetryDuringOriginal(t *T) error {
	if err := t.whileHeld(1_000_000, true, true, func(s Scenario, latency time.Duration) (bool, error) {
		const n = 8
		req, op, amount := s.Payment(t)
		held, err := t.Hold(req, latency)
		if err != nil {
			return false, err
		}
		early := held.Early()
		rs := t.Simultaneously(n, func(int) Request { return req })
		stillRunning := !held.Done()
		orig := held.Wait()
		sent := fmt.Sprintf("%s\n(the original is still waiting on the core, %v)\nthen %d retries at once: the same request", req.String(), latency, n)
		got := Summarize(rs) + "\nand the original answered " + orig.Short()
		if orig.Is(http.StatusConflict, pInProgress) {
			// A retry overtook the original and claimed first: the roles
			// swapped, and this run shows nothing either way.
			return false, nil
		}
		// The key showed in progress to Hold's look, or in a retry's
		// answer: on a slow machine (the race detector, a busy CI) the
		// look can end before the claim is in, while the retries meet it.
		seen := held.Seen
		for _, r := range rs {
			seen = seen || r.Is(http.StatusConflict, pInProgress)
		}
		wrong, retryAfter, late, fenced := "", "", 0, false
		for i, r := range rs {
			ok, why := inProgressAnswer(r)
			if !ok && seen && !fenced {
				// The lab's events up to now, once, for doneAfterCompletion.
				t.history.Fence(t.ctx)
				fenced = true
			}
			switch {
			case ok:
			case seen && t.doneAfterCompletion(r, fmt.Sprintf("client %d", i+1), req.Key, op):
				// Its claim came after the original's commit, and "done"
				// is then right, though the original's own answer was
				// still on its way: it proves nothing.
				late++
			case wrong == "":
				wrong = why
				if r.Is(http.StatusConflict, pInProgress) {
					// Its Retry-After is what is wrong, which got (statuses
					// only) does not show.
					retryAfter = why
				}
			}
		}
		if wrong != "" {
			// Once the original has finished, a retry may have arrived
			// after its commit, and "done" is then right. That proves
			// nothing, unless the retries left early and the key never
			// showed in progress: then the server made them wait for the
			// original (a claim made with the money).
			if !stillRunning && (!early || seen) {
				return false, nil
			}
			if !stillRunning && t.overtaken(op) {
				return false, nil
			}
			// A wrong status is in got; the expected line says only what
			// was due (it once ended ": got 409 …", the got line again).
			expected := "409 " + pInProgress + ", with Retry-After, to every retry while the original runs"
			if retryAfter != "" {
				expected += ": " + retryAfter
			}
			t.Differ(sent, got, expected)
		} else if late > 0 {
			return false, nil
		}
		if !toldRan(orig, op) {
			return true, t.Fail(sent, got, "the original answers 201 Created once its core call returns")
		}
		if !orig.Is(http.StatusCreated, "") {
			// Told its payment ran in another 2xx: a contract
			// difference, and the books and the later rounds judge.
			t.Differ(sent, got, "the original answers 201 Created once its core call returns")
		}
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
		if err := t.Reconcile(sent, got, s.Books); err != nil {
			return true, err
		}
		return true, t.afterTheOriginal(req, orig, sent+"\n→  "+got, s.Books)
	}); err != nil {
		return err
	}
	if err := checkStaggeredRetries(t); err != nil {
		return err
	}
	return retryWithTheKeyUnread(t)
}

// doneAfterCompletion reports whether r, client's answer to a retry of
// key, says the request is done (201, or 409 duplicate-request) and came
// after the original's commit: on a busy machine the original's own
// answer can still be on its way then, and a retry that reached the claim
// after the commit is rightly told the request is done. The commit is
// placed at the earlier of the business write of op, which precedes it,
// and the lab hearing key completed, which follows it: on PostgreSQL the
// lab hears it on a connection of its own, which a retry's answer can
// beat. A "done" before the write is wrong on any server. Fence the
// history first.
func (t *T) doneAfterCompletion(r Response, client, key, op string) bool {
	if r.Status != http.StatusCreated && !r.Is(http.StatusConflict, pDuplicate) {
		return false
	}
	answered, ok := t.history.AnsweredAt(client, key)
	if !ok {
		return false
	}
	if completed, ok := t.history.CompletedAt(key); ok && completed.Before(answered) {
		return true
	}
	wrote, ok := t.history.ExecutedAt(op)
	return ok && wrote.Before(answered)
}

// overtaken reports whether op was executed by a retry rather than by the
// original in flight, as the lab's execution events say: on a busy machine
// a retry can reach the claim before the original, and the roles swap.
// The answers alone cannot tell that from a server that made every retry
// wait for the original; the books can.
func (t *T) overtaken(op string) bool {
	t.history.Fence(t.ctx)
	clients, ok := t.history.ExecutedBy(op)
	return ok && !slices.Contains(clients, inFlight)
}

// afterTheOriginal retries req once its original has answered orig, as a
// patient client does while it is told to wait (409 request-in-progress;
// from stage 4 on, any 409 but duplicate-request, which says the request
// ran): the key's lock ends with the request that held it. The retries
// are the client's retry policy: a plain-text 409 is a contract
// difference recorded once (differUntyped), and tells the client to come
// back as a 409 request-in-progress does. A client still told to come
// back when it stops, its operation completed, is judged by the key table
// (toldToWait): stuck, or left without its answer; a completed operation
// whose every retry is refused with a 409 that never says it ran leaves
// its client without its answer. 409 duplicate-request is a stage 3
// server's answer whatever the subject's stage: a stage 4 scaffold must
// pass this check, and whether a completed key replays is stage 4's
// checks' question. The retries must not execute again.
func (t *T) afterTheOriginal(req Request, orig Response, sent string, books *judging.Books) error {
	const patience = time.Second
	replays := t.Subject().Stage >= 4
	refusedForGood := func(r Response) bool {
		return replays && r.Is(http.StatusConflict, "") && !r.Is(http.StatusConflict, pDuplicate)
	}
	expected := "the original's stored 201 (stage 4 on) or 409 " + pDuplicate + ": the original has answered, so its key is no longer in progress"
	asked := sent + "\nthen, the original answered, the same request again"
	wait := func(r Response) bool {
		if untypedConflict(r) {
			t.differUntyped(asked, r, expected)
		}
		return r.Err != nil || toldToComeBack(r) || refusedForGood(r)
	}
	r, n := t.retryWhile(req, patience, wait)
	story := fmt.Sprintf("%s, while it is told to wait: %s over %v", asked, counted(n, "retry", "retries"), patience)
	if err := t.Reconcile(story, r.Short(), books); err != nil {
		return err
	}
	switch {
	case toldToComeBack(r) && toldSentRan(orig, req):
		// The money moved (the books agree with the 201).
		return t.toldToWait(req.Key, story, r, expected, waitHarms{
			stuck: "its key is still in progress, and every retry is told to wait for good",
			done:  "its money moved, its key is not in progress, and every retry is still told to wait",
		})
	case r.Is(http.StatusConflict, pInProgress):
		return t.Harmful(judging.StuckKey, story, r.String(), "the original has answered, so its key is no longer in progress: the stored 201 (stage 4 on) or 409 "+pDuplicate)
	case toldSentRan(orig, req) && refusedForGood(r):
		return t.Harmful(judging.NoUsableAnswer, story, r.String(), "the original's stored 201: its money moved, its request has ended, and every retry is still refused")
	}
	return nil
}

// checkStaggeredRetries sends the same request 8 times, a few ms apart,
// with the core answering at once or after a few ms: the retries meet
// the original before its claim, inside it, in the core wait, inside the
// business write and after its commit. Exactly one executes; each other
// one is told in progress (with Retry-After) or done, never a 5xx.
func checkStaggeredRetries(t *T) error {
	const opening, n = 1_000_000, 8
	s, err := t.Scenario(2, opening)
	if err != nil {
		return err
	}
	a, b, books := s.A, s.B, s.Books
	for _, latency := range []time.Duration{0, 2 * time.Millisecond, 5 * time.Millisecond, 0, 10 * time.Millisecond} {
		if err := t.Configure(labclient.Config{}.WithCoreLatency(latency)); err != nil {
			return err
		}
		req, op, amount := s.Payment(t)
		gaps := t.gaps(n, 6*time.Millisecond)
		rs := t.Staggered(gaps, func(int) Request { return req })
		sent := fmt.Sprintf("%s\n%d times, %s, the core answering after %v", req.String(), n, apart(gaps), latency)
		got := Summarize(rs)
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		if err := t.Reconcile(sent, got, books); err != nil {
			return err
		}
		for _, r := range rs {
			switch {
			case r.Is(http.StatusCreated, ""), r.Is(http.StatusConflict, pDuplicate):
			default:
				if ok, why := inProgressAnswer(r); !ok {
					t.Differ(sent, got, "one 201, and to every other request 409 request-in-progress with Retry-After, 409 duplicate-request or (stage 4 on) the stored 201: "+why)
				}
			}
		}
		// The books above expect the payment whatever was answered; the
		// 201s are counted here for the contract: they all name one
		// transfer.
		if executedOps(rs...) > 1 {
			return t.Fail(sent, got, "every 201 names one transfer: the request that executed, and its stored answer to the others")
		}
	}
	return nil
}

// retryWithTheKeyUnread sends a payment and, while it waits on the core
// holding its key, a retry whose read of the key table fails
// (fail-key-read): its claim ran into the key and then read nothing of
// it, so the server knows neither whether the retry is the same request
// nor whether it ran, and fails closed (a 5xx, nothing executed), and the
// client retries. A 409 duplicate-request or request-in-progress is an
// answer made up. If the retry claimed first, the original's read is the
// one refused, and the roles swap: the request judged is the one not
// answered 201, by the books. A server that read nothing of the key table
// while the fault was armed was not refused, and is not judged here.
func retryWithTheKeyUnread(t *T) error {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	req, op, amount := s.Payment(t)
	const latency = 300 * time.Millisecond
	held, err := t.Hold(req, latency)
	if err != nil {
		return err
	}
	if err := t.Arm(labctl.FailKeyRead, 1); err != nil {
		return err
	}
	retry := t.Do(req)
	orig := held.Wait()
	left, err := t.Lab().Armed(t.ctx)
	if err != nil {
		return err
	}
	if err := t.Arm(labctl.FailKeyRead, 0); err != nil {
		return err
	}
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return err
	}
	sent := fmt.Sprintf("%s\n(the original is still waiting on the core, %v)\nthen the same request again, its first read of the key table refused (%s)",
		req.String(), latency, labctl.FailKeyRead)
	got := "the original answered " + orig.Short() + ", the retry " + retry.Short()
	got, _, err = t.patientRetries(s, req, op, amount, orig, retry, sent, got,
		"201 Created to the request that executes, and the stored 201 (stage 4 on) or 409 "+pDuplicate+" to the other once it has: nothing of that key is still running")
	if err != nil {
		return err
	}
	if left[labctl.FailKeyRead] > 0 {
		return nil
	}
	var unread Response
	switch {
	case toldRan(orig, op) && !toldRan(retry, op):
		unread = retry
	case toldRan(retry, op) && !toldRan(orig, op):
		unread = orig
	default:
		// Neither claimed and executed at once, or both were told it
		// ran (toldRan): which one's read was refused the answers do not
		// say.
		return nil
	}
	const expected = "a 5xx, nothing executed, for the request whose claim ran into the key and whose read of the key's row failed: it read nothing of the key, so it does not know whether the request is the same or whether it ran; the client retries"
	switch {
	case unread.ServerFailed() && unread.Err == nil:
	case unread.Is(http.StatusConflict, pDuplicate):
		return t.Harmful(judging.NoUsableAnswer, sent, got, expected+"; told its request was already executed, the client stops retrying, on a key whose row the server could not read")
	case unread.Err == nil:
		t.Differ(sent, got, expected+"; "+unread.Short()+" says what the key's row holds, and the server did not read it")
	}
	return nil
}

// inProgressAnswer reports whether r is a proper 409 request-in-progress,
// and if not, what is wrong with it.
func inProgressAnswer(r Response) (bool, string) {
	if !r.Is(http.StatusConflict, pInProgress) {
		return false, "got " + r.Short()
	}
	ra := r.Header.Get("Retry-After")
	if n, err := strconv.Atoi(ra); err == nil && n >= 0 {
		return true, ""
	}
	if _, err := http.ParseTime(ra); err == nil {
		return true, ""
	}
	return false, fmt.Sprintf("Retry-After is %q, neither a number of seconds nor an HTTP date", ra)
}

// checkReleaseAfterFailure is S3.release-after-failure: stage 3's claim,
// committed on its own, is given back when the business write fails
// (checkRetryAfterFailure) or its COMMIT does (fail-commit), to retries
// sent at once (retriesAtOnceAfterFailure), also to a retry that meets
// the release (retryMeetsTheRelease), and after a refusal
// (refusalNotStuck).
func checkReleaseAfterFailure(t *T, s Scenario) error {
	return unseenLast(
		func() error { return checkRetryAfterFailure(t, s) },
		func() error { return retriesAtOnceAfterFailure(t, s) },
		func() error {
			return retryAfterFailure(t, s, labctl.FailCommit, "the COMMIT of the business write fails, and the transaction is rolled back")
		},
		func() error { return retryAfterRefusedBegin(t, s) },
		func() error { return retryMeetsTheRelease(t, s) },
		func() error { return refusalNotStuck(t, s) },
	)
}

// checkRetryAfterFailure catches a claim that outlives a business write
// that failed: the retry is told request-in-progress (stuck) or
// duplicate-request for a payment that never happened. It is
// S1.retry-after-failure, for a claim committed apart from the money
// (stage 1 rolls the claim back with it), and the first part of
// S3.release-after-failure.
func checkRetryAfterFailure(t *T, s Scenario) error {
	return retryAfterFailure(t, s, labctl.FailInTransfer, "the business write returns an internal error")
}

// doArmed sends req with the fault point armed for one occurrence, and
// disarms it once req is answered, whether or not req met it.
func (t *T) doArmed(point string, req Request) (Response, error) {
	if err := t.Arm(point, 1); err != nil {
		return Response{}, err
	}
	r := t.Do(req)
	return r, t.Arm(point, 0)
}

// retriesAtOnceAfterFailure fails a payment's business write, then sends
// its retries together, behind a barrier: the key given back is claimed
// by one of them, which executes once; the others are told it is in
// progress or done. It catches a release that keeps the key's row, marked
// failed, and a claim that takes such a row over with an UPDATE that does
// not ask for the mark again: on PostgreSQL every retry that read the
// mark before the first takeover committed takes the key over too, and
// each one pays (slow-key-update holds each takeover a moment, so that
// the others read the mark meanwhile). On SQLite the claim's INSERT holds
// the one write lock until its takeover commits, and the pattern holds.
// If every retry is told to wait, they wait, as retryAfterFailure's
// client does: a release that runs on its own a moment after the failure
// was answered frees the key by then.
func retriesAtOnceAfterFailure(t *T, s Scenario) error {
	const rounds, retries = 3, 8
	a, b, books := s.A, s.B, s.Books
	processes := 1 + len(t.target.Replicas)
	for round := range rounds {
		req, op, amount := s.Payment(t)
		first, err := t.doArmed(labctl.FailInTransfer, req)
		if err != nil {
			return err
		}
		sent := req.String() + "\n(armed: " + labctl.FailInTransfer + ", the business write returns an internal error)"
		if toldRan(first, op) {
			return recoveredByItself(t, s, req, op, amount, first, sent)
		}
		if first.Err != nil || first.Status < 500 {
			return t.Fail(sent, first.String(), "a 5xx: the business write failed and nothing was executed")
		}
		books.Expect(op)
		if err := t.Reconcile(sent, first.Short(), books); err != nil {
			return err
		}
		// Every update of the key table waits a moment before it runs, so
		// that a takeover that read the key in a statement of its own lets
		// every retry beside it read the key as it was too.
		// On a server of several processes (S3.two-servers) the fault is
		// armed in each, and the retries spread over them.
		if err := t.ArmEverywhere(labctl.SlowKeyUpdate, retries); err != nil {
			return err
		}
		rs := t.Simultaneously(retries, func(i int) Request { r := req; r.Replica = i % processes; return r })
		if err := t.ArmEverywhere(labctl.SlowKeyUpdate, 0); err != nil {
			return err
		}
		sent += fmt.Sprintf("  →  %s\nthen %d× the retry, the same request, at once, behind a barrier, with the slow-key-update fault holding each of the first %d updates of the key table for %v (round %d of %d)",
			first.Short(), retries, retries, fault.KeyUpdateDelay, round+1, rounds)
		if processes > 1 {
			sent += "; every other retry goes through the second process, which has the fault armed too"
		}
		got := Summarize(rs)
		const expected = "one 201: the failed attempt left its key free, one retry claims it and executes, and every other one is told 409 request-in-progress (with Retry-After) or 409 duplicate-request, or (stage 4 on) gets the stored 201"
		answers, last := rs, Response{}
		if toldOps(op, rs...) == 0 && slices.ContainsFunc(rs, toldToComeBack) {
			// A client told to wait waits, as in retryAfterFailure: a key
			// given back a moment after the failure was answered (a
			// release that runs on its own) is free by its next retry.
			// Its retries are the client's retry policy
			// (retryUntilAnswered).
			var n int
			last, n = t.retryUntilAnswered(req, releasePatience, sent+"  →  "+got, expected)
			got += fmt.Sprintf("\nthen the retry again, while it is told to wait: %s over %v  →  %s", counted(n, "retry", "retries"), releasePatience, last.Short())
			answers = append(rs[:len(rs):len(rs)], last)
		}
		// One execution is the books' due, told by a 201 or another 2xx
		// naming op; more show there as a double.
		ran := toldOps(op, answers...)
		if ran > 0 {
			books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		}
		if err := t.Reconcile(sent, got, books); err != nil {
			return err
		}
		if ran == 0 && toldToComeBack(last) {
			// Still told to wait when it stops: the key table says
			// which harm.
			return t.toldToWait(req.Key, sent+"\n→  "+got, last, expected, failedWaitHarms)
		}
		if ran != 1 {
			return t.Fail(sent, got, expected)
		}
		differed := false
		for _, r := range answers {
			if r.Is(http.StatusCreated, "") || r.Is(http.StatusConflict, pDuplicate) {
				continue
			}
			if untypedConflict(r) {
				// A 409 request-in-progress without its type: a
				// contract difference, recorded once in the check.
				t.differUntyped(sent, r, expected)
				continue
			}
			if toldRan(r, op) {
				// Told it ran in another 2xx (the one execution, ran
				// says): a contract difference, recorded once; the
				// other answers are still judged, and the next rounds
				// run.
				if !differed {
					t.Differ(sent, got, expected+": got "+r.Short())
					differed = true
				}
				continue
			}
			if ok, why := inProgressAnswer(r); !ok {
				return t.Fail(sent, got, expected+": "+why)
			}
		}
	}
	return nil
}

// failedWaitHarms is why a client whose failed attempt moved nothing,
// told to wait until it stopped retrying, was harmed (toldToWait).
var failedWaitHarms = waitHarms{
	stuck: "nothing is running, and the key says it is, for good",
	done:  "nothing is running, its key is not in progress, and every retry is still told to wait: the payment can never run",
}

// endedWaitHarms is why a client told to wait until it stopped retrying,
// once nothing of its key was running any more, was harmed (toldToWait),
// whether or not its payment ran.
var endedWaitHarms = waitHarms{
	stuck: "nothing of that key is running any more, and the key says something is, for good",
	done:  "nothing of that key is running any more, its key is not in progress, and every retry is still told to wait: the client never learns what became of its payment",
}

// releasePatience is how long a client told to wait after a failure
// keeps retrying: a key given back a moment after the failure was
// answered (a release that runs on its own) is free well within it, and a
// key still in progress after it is stuck.
const releasePatience = time.Second

// waitAnswer reports whether r tells its client to come back: 409
// request-in-progress.
func waitAnswer(r Response) bool { return r.Is(http.StatusConflict, pInProgress) }

// retryAfterFailure is checkRetryAfterFailure with the business write
// failed by point, armed once, which does what it says. A 201 to the
// failed attempt is reconciled first: a client told its payment was made
// when nothing moved (a COMMIT whose error is not read) has lost it.
func retryAfterFailure(t *T, s Scenario, point, does string) error {
	req, op, amount := s.Payment(t)
	if err := t.Arm(point, 1); err != nil {
		return err
	}
	began := time.Now()
	first := t.Do(req)
	took := time.Since(began)
	if err := t.Arm(point, 0); err != nil {
		return err
	}
	sent := req.String() + "\n(armed: " + point + ", " + does + ")"
	return retryAfterFailed(t, s, req, op, amount, first, took, sent)
}

// retryAfterRefusedBegin is checkRetryAfterFailure with the transaction
// that would move the money refused as it begins (fail-begin), armed once
// the key is claimed, while the original waits on the core, so that the
// claim's own transaction begins. Nothing moved: the key must be given
// back, and the answer must not say the money moved. A server whose
// business transaction begins before the fault is armed (before the
// core call) does not meet it, and the round tells nothing.
func retryAfterRefusedBegin(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	req, op, amount := s.Payment(t)
	began := time.Now()
	held, err := t.Hold(req, 300*time.Millisecond)
	if err != nil {
		return err
	}
	if err := t.Arm(labctl.FailBegin, 1); err != nil {
		return err
	}
	first := held.Wait()
	took := time.Since(began)
	left, err := t.Lab().Armed(t.ctx)
	if err != nil {
		return err
	}
	if err := t.Arm(labctl.FailBegin, 0); err != nil {
		return err
	}
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return err
	}
	sent := req.String() + "\n(armed once the key is claimed, while the original waits on the core: " + labctl.FailBegin + ", the next transaction that may write is refused as it begins)"
	if left[labctl.FailBegin] > 0 {
		// No transaction began while it was armed: the server's business
		// transaction began before the core call, and this round cannot
		// see what it does when that BEGIN fails.
		if toldRan(first, op) {
			books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		} else {
			books.Expect(op)
		}
		return t.Reconcile(sent, first.Short(), books)
	}
	return retryAfterFailed(t, s, req, op, amount, first, took, sent)
}

// retryAfterFailed is retryAfterFailure once the failed attempt, req (op,
// of amount), sent as sent says, was answered first after took.
func retryAfterFailed(t *T, s Scenario, req Request, op string, amount int64, first Response, took time.Duration, sent string) error {
	a, b, books := s.A, s.B, s.Books
	if toldRan(first, op) {
		return recoveredByItself(t, s, req, op, amount, first, sent)
	}
	if first.Err != nil || first.Status < 500 {
		return t.Fail(sent, first.String(), "a 5xx: the business write failed and nothing was executed")
	}
	books.Expect(op)
	if err := t.Reconcile(sent, first.Short(), books); err != nil {
		return err
	}
	story := sent + "  →  " + first.Short()
	const released = "201 Created: the first attempt moved nothing, so it left no claim behind (rolled back with the money, or released) and the retry executes"
	// A client told to wait waits, as the retry policy says: a key given
	// back a moment after the failure was answered (a release that runs on
	// its own) is free by the next retry, and one retry that met it proves
	// nothing stuck. A key still in progress after a second of that is. A
	// plain-text 409 tells it to come back too (retryUntilAnswered).
	retry, n := t.retryUntilAnswered(req, releasePatience, story, released)
	if n == 1 {
		story += "\nthen the retry, the same request  →  " + retry.Short()
	} else {
		story += fmt.Sprintf("\nthen the retry, the same request, while it is told to wait: %s over %v  →  %s", counted(n, "retry", "retries"), releasePatience, retry.Short())
	}
	// A retry told that it ran (a 201, or another 2xx naming op) is
	// booked as run; another status than 201 is a contract difference.
	if !toldRan(retry, op) {
		if err := t.Reconcile(story, retry.Short(), books); err != nil {
			return err
		}
		stalled := ""
		if lockedOut(took, first, retry) {
			stalled = fmt.Sprintf(". The first attempt took %v: the release waited on a write lock: is it run while your own transaction is still open?",
				took.Round(10*time.Millisecond))
		}
		var err error
		switch {
		case toldToComeBack(retry):
			// Still told to wait when it stops: the key table says
			// which harm.
			err = t.toldToWait(req.Key, story, retry, released, waitHarms{stuck: failedWaitHarms.stuck + stalled, done: failedWaitHarms.done + stalled})
		case retry.Is(http.StatusConflict, ""):
			err = t.toldDuplicate(story, retry.String(), released)
			err.(*judging.Failure).Expected += stalled
		case retry.ServerFailed() && retry.Err == nil:
			// The fault is disarmed: a retry that fails again may be
			// the failure kept as the key's answer. One more retry
			// tells a key that answers its failure for good from a
			// server that failed twice.
			again := t.Do(req)
			story += "\nthen another retry  →  " + again.Short()
			if toldRan(again, op) {
				// Told its payment was made: a server that failed twice
				// and then ran it has moved the money once, as asked.
				books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
			}
			if err := t.Reconcile(story, again.Short(), books); err != nil {
				return err
			}
			if again.ServerFailed() && again.Err == nil {
				err = t.Harmful(judging.StuckKey, story, again.String(), released+"; nothing is armed any more, and every retry is answered with a failure again: a failure kept as the key's answer holds the key for good, and the payment can never run"+stalled)
			} else {
				err = t.Fail(story, retry.String(), released+stalled)
			}
		default:
			err = t.Fail(story, retry.String(), released+stalled)
		}
		if f, ok := err.(*judging.Failure); ok && stalled != "" {
			// A release that waited on the request's own transaction is
			// lesson 3's, whichever check met it.
			f.Lesson = lesson3 + "#releasing-a-failed-claim"
		}
		return err
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	if !retry.Is(http.StatusCreated, "") {
		t.Differ(story, retry.String(), released)
	}
	again := t.Do(req)
	story += "\nthen another retry  →  " + again.Short()
	if again.ServerFailed() {
		return t.Fail(story, again.String(), "409 duplicate-request (stages 1–3) or the stored 201 (stage 4 on)")
	}
	return t.Reconcile(story, "", books)
}

// recoveredByItself judges a failed attempt, req (op, of amount), sent as
// sent says, whose client was told its payment was made (toldRan: a 201,
// or another 2xx naming op): the books must show it, or the client walks
// away from money that never moved (a COMMIT whose error was not read).
// If they do, the server recovered from the failure by itself (it ran
// the transaction again once the armed fault was spent) and told the
// truth: no harm, and no failed claim left to give back, so the round
// could not observe the release. Told so in another 2xx than 201 is a
// contract difference, recorded beside that. One retry must not run the
// payment again.
func recoveredByItself(t *T, s Scenario, req Request, op string, amount int64, first Response, sent string) error {
	books := s.Books
	books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	if err := t.Reconcile(sent, first.Short(), books); err != nil {
		return because(err, "a server that does not read the error of the business write, or of the COMMIT that moves the money, answers 201 Created for a payment that never happened, and its client, told it was made, never sends it again")
	}
	if !first.Is(http.StatusCreated, "") {
		t.Differ(sent, first.String(), "a 5xx, or 201 Created from a server that recovered from the failure by itself and moved the money once")
	}
	retry := t.Do(req)
	story := sent + "  →  " + first.Short() + "\nthen the retry, the same request  →  " + retry.Short()
	if err := t.Reconcile(story, retry.Short(), books); err != nil {
		return err
	}
	return t.CouldNotObserve("the key given back after a failure: the failed attempt was told its payment ran (%s) and its money moved once (the server recovered from the failure by itself), so it left no claim to give back", first.Short())
}

// unseenLast runs rounds in turn and returns the first failure; a round
// that could not observe what it needs does not stop the others, and is
// returned at the end if none failed.
func unseenLast(rounds ...func() error) error {
	var unseen error
	for _, round := range rounds {
		err := round()
		var u *judging.Unobserved
		if errors.As(err, &u) {
			if unseen == nil {
				unseen = err
			}
			continue
		}
		if err != nil {
			return err
		}
	}
	return unseen
}

// releaseTries is how many payments retryMeetsTheRelease makes: a retry
// meets the release only if its held read starts before the original has
// given its key back and ends after, and a loaded machine's scheduling can
// put it on either side (the mutant claim-lost-row-unavailable escaped one
// try in two or three at a load average of 23).
const releaseTries = 3

// retryMeetsTheRelease sends a retry while its original waits on the core
// and is about to fail, and holds the retry's first read of the key table
// (slow-key-read) until the original has failed and given its key back.
// On PostgreSQL a claim whose INSERT ran into the key in progress then
// reads no row at all: the key is free, and the retry is told to come
// back (409 request-in-progress, with Retry-After: without one, the
// client does not know when) or claims it; a 5xx says the key store
// failed when it did not. One more retry once the payment is made must
// not run it again. If the retry claimed first,
// the original's read is the one held, and the roles swap. A patient
// client's next retry executes once.
func retryMeetsTheRelease(t *T, s Scenario) error {
	const latency = 100 * time.Millisecond
	books := s.Books
	differed, untimed := false, false
	for range releaseTries {
		req, op, amount := s.Payment(t)
		if err := t.Arm(labctl.FailInTransfer, 1); err != nil {
			return err
		}
		held, err := t.Hold(req, latency)
		if err != nil {
			return err
		}
		if err := t.Arm(labctl.SlowKeyRead, 1); err != nil {
			return err
		}
		retry := t.Do(req)
		orig := held.Wait()
		for _, point := range []string{labctl.SlowKeyRead, labctl.FailInTransfer} {
			if err := t.Arm(point, 0); err != nil {
				return err
			}
		}
		if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
			return err
		}
		sent := fmt.Sprintf("%s\n(armed: fail-in-transfer; the original waits %v on the core, then its business write fails and its key is given back)\n"+
			"then, the key in progress, the same request again, its first read of the key table held %v (slow-key-read)", req.String(), latency, fault.KeyReadDelay)
		const executes = "201 Created: the original moved nothing and gave its key back, so a retry executes"
		got, last, err := t.patientRetries(s, req, op, amount, orig, retry, sent,
			"the original answered "+orig.Short()+", the retry "+retry.Short(), executes)
		if err != nil {
			return err
		}
		// On a busy machine the retry can claim first, and the roles swap:
		// either may be the one whose business write failed, and either
		// the one told to come back, which is then told when.
		for _, r := range []Response{orig, retry} {
			if ok, why := inProgressAnswer(r); !ok && r.Is(http.StatusConflict, pInProgress) && !untimed {
				untimed = true
				t.Differ(sent, got, "409 "+pInProgress+" with Retry-After to the one whose claim ran into the key in progress and read it once it had been given back, like any other in-progress answer: "+why)
			}
		}
		if orig.ServerFailed() && retry.ServerFailed() && !differed {
			differed = true
			t.Differ(sent, got, "one of the two answers the failed business write's 5xx; the other, whose claim ran into the key in progress and read it a moment later, once it had been given back, gets 409 "+pInProgress+" with Retry-After, or 201: the key store did not fail, and a second 5xx says it did")
		}
		// A retry still told to wait when the client stops was judged
		// by patientRetries.
		switch {
		case !toldRan(last, op) && !last.Is(http.StatusConflict, pDuplicate):
			return t.Fail(sent, got, executes+", once")
		case !last.Is(http.StatusCreated, "") && !last.Is(http.StatusConflict, pDuplicate):
			t.Differ(sent, got, executes+", once")
		}
		// The payment made, its key says so: a client whose answer was
		// lost sends it once more, and it must not run again (a claim that
		// found the key given back and went on without claiming it leaves
		// no row, and the next retry pays a second time).
		again := t.Do(req)
		if err := t.Reconcile(sent+"\n→  "+got+"\nthen, once it has answered, the same request once more", again.Short(), books); err != nil {
			return err
		}
	}
	return nil
}

// patientRetries retries req, op of amount from s's first customer to its
// second, as a patient client does while retry, its answer, asks it to
// wait or says the server failed, for a second at most, and reconciles
// the books: the payment ran once if orig, the original's answer, retry
// or the last retry's says it did, and never otherwise. It returns got,
// what the requests were answered, with the retries told, and the last
// answer. Its retries are the client's retry policy: a plain-text 409 is
// a contract difference recorded once (expected is what a retry should
// have been told), and tells the client to come back as a 409
// request-in-progress does; a client still told to come back when it
// stops is judged by the key table (toldToWait).
func (t *T) patientRetries(s Scenario, req Request, op string, amount int64, orig, retry Response, sent, got, expected string) (string, Response, error) {
	wait := func(r Response) bool {
		if untypedConflict(r) {
			t.differUntyped(sent+"\n→  "+got, r, expected)
		}
		return r.Err != nil || r.ServerFailed() || toldToComeBack(r)
	}
	last, n := retry, 0
	if wait(retry) {
		last, n = t.retryWhile(req, time.Second, wait)
		got += fmt.Sprintf("\nthen %s, while it is told to wait  →  %s", counted(n, "retry", "retries"), last.Short())
	}
	if toldAnyRan(op, orig, retry, last) || last.Is(http.StatusConflict, pDuplicate) {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	} else {
		s.Books.Expect(op)
	}
	if err := t.Reconcile(sent, got, s.Books); err != nil {
		return got, last, err
	}
	if toldToComeBack(last) {
		return got, last, t.toldToWait(req.Key, sent+"\n→  "+got, last, expected, endedWaitHarms)
	}
	return got, last, nil
}

// refusalNotStuck sends a transfer of more than its account ever held,
// refused (422 insufficient-funds) inside the business write, after the
// claim, and retries it: a refusal moved nothing, like any failure before
// the money, so its key is not left in progress. At stage 3 the claim is
// released and the retry executes, and is refused again; from stage 4 the
// refusal is stored and replayed. Either way no retry is told to wait.
// The retries are the client's retry policy: a 409 with no problem type
// (a plain-text 409) is recorded as a contract difference, once, and told
// to come back as by a 409 request-in-progress (untilAnswered); a client
// still told so when it stops is judged by the key table.
func refusalNotStuck(t *T, s Scenario) error {
	req, sent, first, err := sendRefused(t, s)
	if err != nil {
		return err
	}
	books := s.Books
	expected := "422 " + pInsufficient + " again: the refusal moved nothing, so its claim is released and the retry executes (stage 3), or the refusal is stored and replayed (stage 4 on); no request of that key is running, and none is told to wait"
	asked := sent + "  →  " + first.Short() + "\nthen the same request again"
	wait := func(r Response) bool {
		if untypedConflict(r) {
			t.differUntyped(asked, r, expected)
		}
		return r.Err != nil || toldToComeBack(r)
	}
	retry, n := t.retryWhile(req, releasePatience, wait)
	story := fmt.Sprintf("%s  →  %s\nthen the same request again, while it is told to wait: %s over %v", sent, first.Short(), counted(n, "retry", "retries"), releasePatience)
	if err := t.Reconcile(story, retry.Short(), books); err != nil {
		return err
	}
	// A server may give a refused request's claim back a moment after it
	// answers, as retryAfterFailure allows after a 500: the key is stuck
	// only if it stays in progress as long as a retry is told to wait.
	var st labctl.State
	if _, err := t.WaitFor(releasePatience, func() (bool, error) {
		var err error
		st, err = t.State()
		return err == nil && !judging.KeyInProgress(st, req.Key), err
	}); err != nil {
		return err
	}
	if judging.KeyInProgress(st, req.Key) {
		return t.Harmful(judging.StuckKey, story, retry.String()+"\nthen /lab/state: "+judging.DescribeKeyRows(judging.KeyRows(st, req.Key)), expected)
	}
	if toldToComeBack(retry) {
		// Told to wait for a key that is not in progress: the key table,
		// not the 409, says which harm.
		return t.toldToWait(req.Key, story, retry, expected, waitHarms{})
	}
	if !retry.Is(http.StatusUnprocessableEntity, pInsufficient) {
		t.Differ(story, retry.String(), expected)
	}
	return nil
}

// lockedOut reports whether a failed attempt looks like a release that
// waited on SQLite's write lock: it took about the busy timeout, or a 503
// says the database is locked. A release run while the request's own
// business transaction is still open (its deferred Rollback not yet run)
// does exactly that, and then fails, leaving the key in progress.
func lockedOut(took time.Duration, rs ...Response) bool {
	if took >= sqlitedb.BusyTimeout*9/10 {
		return true
	}
	for _, r := range rs {
		body := strings.ToLower(string(r.Body))
		if r.Status == http.StatusServiceUnavailable && (strings.Contains(body, "database is locked") || strings.Contains(body, "sqlite_busy")) {
			return true
		}
	}
	return false
}

// checkTwoServersRelease catches a failed attempt's key taken over by a
// decision that only one process sees: a release that keeps the key's
// row, marked failed, and a claim that reads the mark and takes the row
// over with a plain UPDATE, kept apart from the other retries by a mutex
// in the server's memory, holds against retries that reach the same
// process (S3.release-after-failure), and a second process knows nothing
// of that mutex. The server runs as two processes on one database; a
// payment's business write fails, and its retries arrive at once, every
// other one through the second process (retriesAtOnceAfterFailure).
func checkTwoServersRelease(t *T) error {
	rt, s, err := t.twoServers(1_000_000)
	if err != nil {
		return err
	}
	return retriesAtOnceAfterFailure(rt, s)
}
