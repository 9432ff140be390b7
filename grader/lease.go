package grader

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
)

// strand leaves req's key in progress the way a crash does: it arms
// crash-in-transfer and sends req, whose business write dies before its
// commit (in process the request is aborted; a child process exits and is
// restarted). It returns what the client heard, and fails if it was a
// success.
func (t *T) strand(req Request) (Response, error) {
	if err := t.Arm(labctl.CrashInTransfer, 1); err != nil {
		return Response{}, err
	}
	r := t.Do(req)
	if r.Is(http.StatusCreated, "") {
		return r, t.Fail(req.String()+"\n(armed: crash-in-transfer)", r.String(), "no answer: the process died inside the business write")
	}
	return r, t.restartCrashed()
}

// strandPayment strands a new payment of s (see strand): it returns the
// payment, ran, which books its execution in s's books, and what its
// client got.
func (t *T) strandPayment(s Scenario) (p strandedPayment, ran func(), stranded Response, err error) {
	p.req, p.op, p.amount = s.Payment(t)
	s.Books.Expect(p.op)
	ran = func() { s.Books.Transfer(p.op, s.A.Accounts[0], s.B.Accounts[0], p.amount) }
	stranded, err = t.strand(p.req)
	return p, ran, stranded, err
}

// restartCrashed waits for a child process that crash-in-transfer ended
// to exit, and restarts it on its database; in process there is nothing
// to do.
func (t *T) restartCrashed() error {
	if t.target.Child == nil {
		return nil
	}
	exited, err := t.Crashed(10 * time.Second)
	if err != nil {
		return err
	}
	if !exited {
		return fmt.Errorf("crash-in-transfer was armed and the request sent, but the server did not exit")
	}
	return t.Restart()
}

// outliveLease holds req on the core for latency (see Hold) and then
// moves the lab clock past lease, so that the original outlives its lease
// while it waits. It reports whether the original was held: if it was not
// (it answered, or its key did not show in progress, before the check
// could act), the check tries again with a longer wait, and err is the
// could-not-observe error of a key table the lab cannot read.
func (t *T) outliveLease(req Request, latency, lease time.Duration) (orig *Held, held bool, err error) {
	orig, err = t.Hold(req, latency)
	if err != nil {
		return nil, false, err
	}
	if !orig.Seen || !orig.Early() {
		return nil, false, t.unheld(orig, "whether the original holds its key in progress")
	}
	return orig, true, t.Advance(lease + time.Second)
}

// lateRetry is what the attempts of retryBeforeLateOriginal were
// answered: the retry that took the key over, the late original (first)
// and one more retry sent after both (last); tookOver says the retry was
// answered while the original still waited on the core.
type lateRetry struct {
	retry, first, last Response
	tookOver           bool
}

// retryBeforeLateOriginal sends req as an original that outlives lease
// while it waits latency on the core (see outliveLease), then, with the
// core quick again, its retry, which takes the key over and is answered
// while the original still waits if the machine keeps pace; then it
// waits for the original's answer and sends one more retry. held is as
// outliveLease's.
func (t *T) retryBeforeLateOriginal(req Request, latency, lease time.Duration) (r lateRetry, held bool, err error) {
	orig, held, err := t.outliveLease(req, latency, lease)
	if !held || err != nil {
		return r, held, err
	}
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return r, true, err
	}
	r.retry = t.Do(req)
	r.tookOver = !orig.Done()
	r.first = orig.Wait()
	r.last = t.Do(req)
	return r, true, nil
}

// lease reads the lease period in force.
func (t *T) lease() (time.Duration, error) {
	st, err := t.State()
	if err != nil {
		return 0, err
	}
	return time.ParseDuration(st.Config.Lease)
}

// doneRetries is how many retries retryUntilDone sends at most.
const doneRetries = 5

// retryUntilDone retries req as a client does after losing its answer:
// the same key and body, until it gets a final answer (anything but a 5xx,
// a dropped connection or an answer that tells it to come back), doneRetries times at
// most. Instead of waiting out Retry-After it moves the lab clock past the
// lease after each retry told to wait but the last, as if the client had
// waited before the next: after the last nothing follows, and the lab
// clock stays where the client left it for what the check reads next. It
// returns the final answer and the story of the attempts. Its retries
// are the client's retry policy, judged as untilAnswered judges it: a 409
// with no problem type (a plain-text 409) tells the client to come back
// as a 409 request-in-progress does (toldToComeBack), and is a contract
// difference recorded once in a check, sent saying what came before the
// retries and expected what a retry should have been told.
func (t *T) retryUntilDone(req Request, lease time.Duration, sent, expected string) (Response, string, error) {
	asked := sent + "\nthen the same request again"
	var story strings.Builder
	var r Response
	for attempt := 1; attempt <= doneRetries; attempt++ {
		r = t.Do(req)
		fmt.Fprintf(&story, "\nretry %d  →  %s", attempt, r.Short())
		if untypedConflict(r) {
			t.differUntyped(asked, r, expected)
		}
		switch {
		case attempt == doneRetries:
		case toldToComeBack(r):
			if err := t.Advance(lease + time.Second); err != nil {
				return r, story.String(), err
			}
			fmt.Fprintf(&story, ", then %v of lab time", lease+time.Second)
		case r.ServerFailed():
		default:
			return r, story.String(), nil
		}
	}
	return r, story.String(), nil
}

// strandedPayment is a payment whose original died inside its business
// write, leaving its key in progress, and where its claim falls on the lab
// clock: not before claimedFrom, not after claimedBy.
type strandedPayment struct {
	req                    Request
	op                     string
	amount                 int64
	claimedFrom, claimedBy time.Time
	// early is set when a retry was not told to wait while the lease was
	// live: it is recorded as a contract difference, and the key, if
	// that retry executed, is no longer stranded.
	early bool
}

// liveLeaseRetry sets lease in the config, strands a payment of s under
// it and retries it 1s before the lease expires: the retry must get 409
// request-in-progress. It returns the payment and the story so far, with
// lease in force.
//
// The lease runs from the claim, which the grader cannot see but can
// bound on the lab clock, and that clock runs on with real time while a
// child process dies and restarts: seconds, on a loaded machine. A retry
// timed from the present would then arrive after the lease expired, and a
// correct server would rightly take the key over. So the retry is aimed 1s
// before the earliest instant the lease can expire, and any other answer
// than 409 is judged only when the lab time read after it proves it came
// before that instant. When it does not, the payment has run its course:
// the money is reconciled and a fresh payment tries again, three times at
// most before the check says it could not observe a retry in time.
//
// A retry answered otherwise before the lease expired is a contract
// difference, recorded with Differ, not the check's end: the payment is
// returned with early set, its execution booked if the retry executed, so
// that the retries the check sends after the expiry still reconcile the
// money (a server that executes every retry pays them again).
func (t *T) liveLeaseRetry(s Scenario, lease time.Duration, round int) (strandedPayment, string, error) {
	const tries = 3
	var p strandedPayment
	for try := 1; ; try++ {
		// The lease is set before each claim and again after the crash
		// that strands it: a child process started again has forgotten
		// the config, and would lease the next try's claim, and the keys
		// its retries take over, for the default's 30s.
		if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
			return p, "", err
		}
		var err error
		p.req, p.op, p.amount = s.Payment(t)
		s.Books.Expect(p.op)
		if p.claimedFrom, err = t.LabNow(); err != nil {
			return p, "", err
		}
		stranded, err := t.strand(p.req)
		if err != nil {
			return p, "", err
		}
		if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
			return p, "", err
		}
		if p.claimedBy, err = t.LabNow(); err != nil {
			return p, "", err
		}
		sent := fmt.Sprintf("(POST /lab/config: lease %v)\n%s\n(armed crash-in-transfer: the original died inside its business write  →  %s)", lease, p.req.String(), stranded.Short())
		if try > 1 {
			sent = fmt.Sprintf("(the retries of %d payments before this one were answered too late to be timed against their leases)\n", try-1) + sent
		}
		if round > 0 {
			sent = "(after a first round with a shorter lease)\n" + sent
		}
		expires := p.claimedFrom.Add(lease)
		if err := t.SetClock(expires.Add(-time.Second)); err != nil {
			return p, "", err
		}
		early := t.Do(p.req)
		answered, err := t.LabNow()
		if err != nil {
			return p, "", err
		}
		sent += fmt.Sprintf("\nthen the lab clock set to 1s before the lease expires, and a retry  →  %s", early.Short())
		ok, why := inProgressAnswer(early)
		if ok {
			return p, sent, nil
		}
		if toldRan(early, p.op) {
			s.Books.Transfer(p.op, s.A.Accounts[0], s.B.Accounts[0], p.amount)
		}
		if err := t.Reconcile(sent, early.Short(), s.Books); err != nil {
			return p, "", err
		}
		if answered.Before(expires) || early.Is(http.StatusConflict, pInProgress) {
			t.Differ(sent, early.String(), "409 "+pInProgress+" with Retry-After ("+why+"): the lease in force, "+lease.String()+", is still live; read it from env.Config() at each claim")
			p.early = true
			return p, sent, nil
		}
		if try == tries {
			return p, "", t.CouldNotObserve("a retry while the lease was live: %d times the retry aimed 1s before its lease expired was answered after it had (the lab clock runs on with real time, and the round trip took longer than 1s), so whether the server took over a live lease is unknown", tries)
		}
	}
}
