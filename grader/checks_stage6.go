package grader

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/fault"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
)

// checkLeaseTakeoverOnce catches a key stuck in progress after a crash
// (no lease: stages 3–5), a lease read once (when the server started, or
// at its first claim) instead of from the config in force, and a
// takeover that two retries can both win (the lease read in one statement
// or transaction and written in another): both execute, or, where the
// completion is fenced by the lease owner, both call the core and one
// rolls back; and a takeover that keeps a key from the next retry longer
// than the lease in force (see retakenAtExpiry). Two rounds run on one
// server, each with its own lease set just before it, and again after the
// crash that strands its payment (a child process started again has
// forgotten it): 16 retries released at once, then 16 arriving a few
// milliseconds apart; then a retry that takes a key over dies, and many
// keys are retried at once (takeoverBurst).
func checkLeaseTakeoverOnce(t *T, s Scenario) error {
	early := false
	err := leaseTakeoverOnce(t, s, &early)
	return t.earlyFirst(early, err)
}

// earlyFirst returns err as it is, unless a retry was taken early (a
// contract difference, recorded) and err is a contract difference found
// after it: that one is recorded too, after it, so that the retry taken
// early leads the failure. The probes after it were written for a server
// that makes retries wait while the lease is live, and what they expect
// names another cause (a process that frees keys when it starts, a
// takeover that waits too long) than the one the first difference shows.
// A money finding still leads, wherever it was found.
func (t *T) earlyFirst(early bool, err error) error {
	if !early {
		return err
	}
	return t.note(err)
}

// leaseTakeoverOnce is S6.lease-takeover-once; it sets *early once a
// retry was not told to wait while a lease was live.
func leaseTakeoverOnce(t *T, s Scenario, early *bool) error {
	const n = 16
	a, b, books := s.A, s.B, s.Books
	// The first lease is shorter than the default's 30s, the second longer
	// than the first.
	first := t.drawLease(5, 20)
	leases := []time.Duration{first, first + t.drawLease(5, 20)}
	for round, lease := range leases {
		p, sent, err := t.liveLeaseRetry(s, lease, round)
		if err != nil {
			return err
		}
		*early = *early || p.early
		req, op := p.req, p.op
		// A 201, or another 2xx naming op, tells its client that its
		// operation ran: the books expect it once, however many 201s (and
		// transfers) the retries were told of.
		executed := func(rs ...Response) int {
			k := toldOps(op, rs...)
			if k > 0 && books.Executions[op] == 0 {
				books.Transfer(op, a.Accounts[0], b.Accounts[0], p.amount)
			}
			return k
		}
		// Whether the lab sees the original's key in progress before the
		// clock moves, so that a key gone after it is known to be purged.
		st, err := t.State()
		if err != nil {
			return err
		}
		// Counted from the latest instant the claim can have been made, so
		// that however late the original was claimed, its lease is over.
		if err := t.SetClock(p.claimedBy.Add(lease + time.Second)); err != nil {
			return err
		}
		if !p.early {
			sent += "\nthen the lab clock set to 1s after the lease expired"
			if err := t.editedAtExpiredLease(s, p, judging.KeyInProgress(st, req.Key), "the purge that ran when the lab clock moved past its lease", &sent); err != nil {
				return err
			}
		}
		before, err := t.State()
		if err != nil {
			return err
		}
		// The retries come in the middle of other customers' traffic: while
		// another request holds the write lock, a takeover that reads the
		// lease in one statement and writes it in another lets many
		// retries read "expired" before any of them writes.
		others := make([]Request, n)
		for i := range others {
			amount, op := t.Amount(1, 1_000), t.Op()
			books.Expect(op)
			others[i] = Transfer(b, t.Key(), TransferBody(b.Accounts[1], a.Accounts[1], amount, op))
		}
		burst := func(i int) Request {
			if i%2 == 0 {
				return req
			}
			return others[i/2]
		}
		var all []Response
		if round == 0 {
			all = t.Simultaneously(2*n, burst)
			sent += fmt.Sprintf("\nthen %d retries at once, among %d other transfers", n, n)
		} else {
			all = t.Staggered(t.gaps(2*n, 2*time.Millisecond), burst)
			sent += fmt.Sprintf("\nthen %d retries arriving a few ms apart, among %d other transfers", n, n)
		}
		var rs []Response
		for i, r := range all {
			if i%2 == 0 {
				rs = append(rs, r)
				continue
			}
			var body struct {
				Amount   int64             `json:"amount"`
				Metadata map[string]string `json:"metadata"`
			}
			json.Unmarshal([]byte(others[i/2].Body), &body)
			if toldRan(r, body.Metadata["op"]) {
				books.Transfer(body.Metadata["op"], b.Accounts[1], a.Accounts[1], body.Amount)
			}
		}
		got := Summarize(rs)
		k := executed(rs...)
		if err := t.Reconcile(sent, "the retries: "+got+"; the other transfers: "+Summarize(otherAnswers(all)), books); err != nil {
			return err
		}
		for i, r := range all {
			if i%2 == 0 || r.Is(http.StatusCreated, "") {
				continue
			}
			const executes = "201 Created: another customer's transfer with its own key executes"
			if !toldSentRan(r, others[i/2]) {
				return t.Fail(sent, others[i/2].String()+"  →  "+r.String(), executes)
			}
			// Told it ran in another 2xx: a contract difference; the
			// takeover is still judged.
			t.Differ(sent, others[i/2].String()+"  →  "+r.String(), executes)
		}
		if p.early {
			// The key was not left in progress for these retries to take
			// over: only their money is judged, and it was.
			continue
		}
		for _, r := range rs {
			if r.ServerFailed() {
				return t.Fail(sent, got, "no 5xx and no dropped connection: one retry takes the key over and executes, the others get 409 request-in-progress")
			}
		}
		switch {
		case k == 0:
			ran := func() { books.Transfer(op, a.Accounts[0], b.Accounts[0], p.amount) }
			return t.noTakeover(sent, got, p, rs, ran, books, "one retry takes over the expired lease and executes: 201 Created")
		case k > 1:
			return t.Fail(sent, got, "every 201 names one transfer: one execution, and its stored answer to the others")
		}
		// Money holds even when two retries both won the takeover: the
		// completion is fenced by the lease owner, so all but the last
		// winner roll back. But each winner called the core first, a side
		// effect the database cannot roll back; the lab counts the calls.
		after, err := t.State()
		if err != nil {
			return err
		}
		if calls := after.CoreCalls[op] - before.CoreCalls[op]; calls > 1 {
			return t.Fail(sent, fmt.Sprintf("%s; the core was called for this payment by %d of the retries", got, calls),
				"one retry takes the expired lease over and calls the core, once: the takeover is decided by one conditional write, which the other retries find already made")
		}
		last := t.Do(req)
		for _, r := range rs {
			if d := ownAnswerMismatch(r, last, "the original"); r.Is(http.StatusCreated, "") && d != "" {
				return t.Fail(sent+"  →  "+got+"\nthen one more retry", last.String()+"\n"+d, "the stored 201 of the retry that executed")
			}
		}
	}
	if err := t.retakenAtExpiry(s); err != nil {
		return err
	}
	burst, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	if err := t.takeoverBurst(burst); err != nil {
		return err
	}
	return t.editedAfterRestart()
}

// retakenAtExpiry catches a takeover that leases the key for longer than
// the lease in force (the default's 30s, whatever the config says, or the
// lease the key was first claimed with), a takeover that waits past the
// expiry (a second of grace), and a lease judged by the config of the
// moment a retry comes instead of the one in force when it was granted:
// each tells a retry to wait longer than the lease the API promised. It
// strands a payment of s under a lease drawn from the seed, sets a
// shorter one, lets a retry take the key over once the first has expired
// and crashes the retry too, inside its business write; then it sets a
// longer lease, and just past the shorter lease, run from that takeover,
// one more retry must take the key over and execute.
//
// The takeover falls between the instant the retry was sent and the
// instant its client lost the connection. The last retry is aimed
// pastExpiry after the latest expiry that allows (past it, not at it:
// whether a lease is over at the very instant it ends is not this step's
// matter). In process that window is one request's round trip, and a
// server with a second of grace, asked a few ms later, still says wait.
// A window wider than wideWindow (a loaded machine) could let a grace
// pass unseen: a 201 after one is no proof, and the step runs again with
// another payment, up to three times, before it takes the 201. A child
// process's restart after the retry died is no part of the window.
func (t *T) retakenAtExpiry(s Scenario) error {
	lease := t.drawLease(5, 20)
	claimed := lease + t.drawLease(5, 20)
	for try := 1; ; try++ {
		wide, err := t.retakeOnce(s, claimed, lease)
		if err != nil || !wide || try == 3 {
			return err
		}
	}
}

// retakeOnce is one try of retakenAtExpiry: the payment is claimed under
// claimed, and lease is in force at the takeover. wide reports a 201 to
// the last retry after a window wider than wideWindow.
func (t *T) retakeOnce(s Scenario, claimed, lease time.Duration) (wide bool, err error) {
	const (
		pastExpiry = 100 * time.Millisecond
		wideWindow = 500 * time.Millisecond
	)
	// Set at every try: a child process started again (after the last
	// try's crashes) has forgotten the config.
	if err := t.Configure(labclient.Config{Lease: claimed}); err != nil {
		return false, err
	}
	p, ran, stranded, err := t.strandPayment(s)
	if err != nil {
		return false, err
	}
	// The lease the takeover must write, shorter than the claim's: a
	// takeover leases the key for the lease in force, not for the one it
	// was first claimed with. (A child process started again has
	// forgotten the config in any case.)
	if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
		return false, err
	}
	if p.claimedBy, err = t.LabNow(); err != nil {
		return false, err
	}
	if err := t.SetClock(p.claimedBy.Add(claimed + time.Second)); err != nil {
		return false, err
	}
	if err := t.Arm(labctl.CrashInTransfer, 1); err != nil {
		return false, err
	}
	// The takeover falls before the retry's death, which its client sees
	// at once, and the lab clock runs at the wall's pace: sentAt plus the
	// time from before the clock was read to the death bounds it. A
	// child's restart after the death is no part of the window.
	before := time.Now()
	sentAt, err := t.LabNow()
	if err != nil {
		return false, err
	}
	taker := t.Do(p.req)
	window := time.Since(before)
	sent := fmt.Sprintf("(POST /lab/config: lease %v)\n%s\n(armed crash-in-transfer: the original died inside its business write  →  %s)\n"+
		"then POST /lab/config: lease %v, the lab clock set to 1s after the original's lease expired, and a retry (armed crash-in-transfer: it takes the key over and dies too)  →  %s",
		claimed, p.req.String(), stranded.Short(), lease, taker.Short())
	expected := fmt.Sprintf("201 Created: a retry that took the key over leased it for the lease in force at its takeover, %v (not the %v the key was first claimed with), from its takeover, and a longer lease set in the config afterwards is for the leases granted after; once that lease is over, the next retry takes the key over at once and executes, and is not told to wait longer than the lease the API promised", lease, claimed)
	if taker.Err == nil {
		// The server answered: the crash did not fire, and the retry did
		// not reach the business write.
		if err := t.Arm(labctl.CrashInTransfer, 0); err != nil {
			return false, err
		}
		if toldRan(taker, p.op) {
			ran()
		}
		if err := t.Reconcile(sent, taker.Short(), s.Books); err != nil {
			return false, err
		}
		if toldRan(taker, p.op) {
			return false, t.Fail(sent, taker.String(), "no answer: the retry took the key over, and died inside its business write")
		}
		return false, t.noTakeover(sent, taker.Short(), p, []Response{taker}, ran, s.Books, "the retry takes over the expired lease and runs its business write, where the armed crash ends it: no answer")
	}
	if err := t.restartCrashed(); err != nil {
		return false, err
	}
	// The config now asks for a longer lease: it is the lease of the
	// claims and takeovers to come, and lengthens no lease already granted.
	longer := lease + t.drawLease(5, 20)
	if err := t.Configure(labclient.Config{Lease: longer}); err != nil {
		return false, err
	}
	takenBy := sentAt.Add(window)
	if err := t.SetClock(takenBy.Add(lease + pastExpiry)); err != nil {
		return false, err
	}
	r := t.Do(p.req)
	sent += fmt.Sprintf("\nthen POST /lab/config: lease %v, the lab clock set to %v after the lease of that takeover (%v) expired at the latest, and one more retry", longer, pastExpiry, lease)
	if toldRan(r, p.op) {
		ran()
	}
	if err := t.Reconcile(sent, r.Short(), s.Books); err != nil {
		return false, err
	}
	if toldRan(r, p.op) {
		if !r.Is(http.StatusCreated, "") {
			// Told it ran in another 2xx: a contract difference; the
			// takeover happened in time.
			t.Differ(sent, r.String(), expected)
		}
		return window > wideWindow, nil
	}
	return false, t.noTakeover(sent, r.Short(), p, []Response{r}, ran, s.Books, expected)
}

// noTakeover judges a round in which none of the retries rs (summed up
// as got) took p's expired lease over. When every one was told to wait,
// the key is judged as a crashed request's that never converged
// (judgeUnconverged: one more retry once the client's retry horizon is
// over, money first, ran recording p's execution in books if the lab saw
// one). A lease read once at start (the default's 30s) has run out by
// then, and its late takeover fails the contract against expected, as
// any other answer does.
func (t *T) noTakeover(sent, got string, p strandedPayment, rs []Response, ran func(), books *judging.Books, expected string) error {
	if !slices.ContainsFunc(rs, func(r Response) bool { return !r.Is(http.StatusConflict, pInProgress) }) {
		return t.judgeUnconverged(sent+"  →  "+got, []unconverged{{p.req, rs[len(rs)-1], p.op, ran}}, books, expected)
	}
	return t.Fail(sent, got, expected)
}

// editedAtExpiredLease sends p's request with its amount edited, under
// its key, once p's lease has expired: an edited request is not a retry,
// and a takeover is for the request the key was first used with. It gets
// 422 idempotency-key-reused, whatever the key's state, and nothing moves;
// a server that looks at the state before the fingerprint lets it take
// the key over and execute another amount, which every retry of the
// crashed original is then answered with; so does one that deleted the
// key in progress, its lease expired, in what ran between (a purge run by
// the clock's move, a server process started again), except that the
// original's retries are then refused as edited requests: held says the
// lab saw the key in progress before it, so that a key gone after it is
// known to be deleted by between. sent gets the step.
func (t *T) editedAtExpiredLease(s Scenario, p strandedPayment, held bool, between string, sent *string) error {
	st, err := t.State()
	if err != nil {
		return err
	}
	before := judging.SnapshotOf(st)
	deleted := held && len(judging.KeyRows(st, p.req.Key)) == 0
	edited := p.req
	edited.Body = TransferBody(s.A.Accounts[0], s.B.Accounts[0], p.amount+t.Amount(1, 9_999), p.op)
	r := t.Do(edited)
	*sent += ", and the same key with the amount edited: " + edited.String() + "  →  " + r.Short()
	expected := "422 " + pKeyReused + ": an edited request is not a retry, whatever the state of the key; nothing executes, and the key stays the original's, for its retries to take over"
	if r.Is(http.StatusCreated, "") && deleted {
		return t.Harmful(judging.WrongAnswer, *sent, r.String(), expected+
			"; here the crashed original's key was gone before the edited request came, deleted, in progress, by "+between+": the edited request claimed the key afresh and ran another amount, and every retry of the original will be refused as an edited request, its payment never run")
	}
	if r.Is(http.StatusCreated, "") {
		return t.Harmful(judging.WrongAnswer, *sent, r.String(), expected+
			"; here the edited request took over the crashed original's key and ran another amount, and every retry of the original will be answered with this transfer")
	}
	if err := t.unchanged(before, *sent, r); err != nil {
		return err
	}
	if !r.Is(http.StatusUnprocessableEntity, pKeyReused) {
		t.Differ(*sent, r.String(), expected)
	}
	return nil
}

// editedAfterRestart is editedAtExpiredLease across a start of the
// server, in a child process: it strands a payment, sets the lab clock
// past its lease, kills the process and starts it again, and sends the
// edited request, then the original's retry, which must take the key over
// and execute. A server that frees, as it starts, the keys left in
// progress whose lease has expired (taken for those of requests that died
// with the last process, the live ones left to a process that may still
// run them) lets the edited request claim the key afresh and run another
// amount: an expired lease is for a retry of the same request to take
// over, whenever the process that holds the key started.
func (t *T) editedAfterRestart() error {
	c, err := t.OnChild()
	if err != nil {
		return err
	}
	s, err := c.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	lease := c.drawLease(5, 20)
	if err := c.Configure(labclient.Config{Lease: lease}); err != nil {
		return err
	}
	p, ran, stranded, err := c.strandPayment(s)
	if err != nil {
		return err
	}
	if p.claimedBy, err = c.LabNow(); err != nil {
		return err
	}
	if err := c.SetClock(p.claimedBy.Add(lease + time.Second)); err != nil {
		return err
	}
	// Whether the lab sees the key in progress before the process
	// starts again, so that a key gone after it is known to be freed by
	// the start.
	st, err := c.State()
	if err != nil {
		return err
	}
	c.kill()
	if err := c.Restart(); err != nil {
		return err
	}
	sent := fmt.Sprintf("(POST /lab/config: lease %v)\n%s\n(armed crash-in-transfer: the original died inside its business write  →  %s)\n"+
		"then the lab clock set to 1s after the lease expired, the server process killed and started again on its database",
		lease, p.req.String(), stranded.Short())
	if err := c.editedAtExpiredLease(s, p, judging.KeyInProgress(st, p.req.Key), "the server process as it started again", &sent); err != nil {
		return err
	}
	r := c.Do(p.req)
	sent += "\nthen a retry of the original"
	if toldRan(r, p.op) {
		ran()
	}
	if err := c.Reconcile(sent, r.Short(), s.Books); err != nil {
		return err
	}
	if !toldRan(r, p.op) {
		return c.noTakeover(sent, r.Short(), p, []Response{r}, ran, s.Books, "201 Created: the retry takes over the expired lease and executes")
	}
	if !r.Is(http.StatusCreated, "") {
		// Told it ran in another 2xx: a contract difference; the takeover
		// happened.
		c.Differ(sent, r.String(), "201 Created: the retry takes over the expired lease and executes")
	}
	return nil
}

// takeoverBurst retries many expired keys at once. A takeover that reads
// the lease in one statement and writes it in another wins twice only
// when a second retry reads before the first one's write, and on
// PostgreSQL the claim's INSERT, which waits for a row another
// transaction is changing, narrows that window to the first retry's few
// statements: one key gives it a few chances, which it takes in about
// half the runs. So takeoverKeys payments are held on the core, their
// leases expire while they wait, and each is retried takeoverRetries
// times, every retry released at once, with the slow-key-update fault
// holding the first takeoverKeys updates of the key table: a retry that
// read its lease expired writes it 100 ms later, while the other retries
// read it expired too, and a takeover by one conditional UPDATE matches
// nothing that late if another retry took the key meanwhile; and with the
// slow-key-delete-after-read fault holding as many deletes of the key
// table by a request that read it before: a retry that read its lease
// expired and deletes the key by its name, to claim it afresh, deletes
// 100 ms later the claim another retry made meanwhile (a takeover by
// UPDATE deletes nothing, and is not held). Then the
// originals' clients hang up, so that, like crashed originals, they
// never execute (a late original that does is
// S6.late-original-fenced's matter). Money holds
// even when two retries win (the completion is fenced by the lease owner,
// and all but the last winner roll back), but each winner called the core
// first, a side effect the database cannot roll back: the lab counts the
// calls, and one key must have at most one from its retries.
func (t *T) takeoverBurst(s Scenario) error {
	const takeoverKeys, takeoverRetries = 8, 16
	// The originals wait far longer than the burst takes, and far longer
	// than the check waits to see them held.
	const hold, seen = time.Minute, 10 * time.Second
	lease := t.drawLease(5, 20)
	if err := t.Configure(labclient.Config{Lease: lease, CoreLatency: hold}); err != nil {
		return err
	}
	type payment struct {
		req     Request
		op      string
		amount  int64
		orig    *Pending
		abandon context.CancelFunc
	}
	ps := make([]payment, takeoverKeys)
	for i := range ps {
		p := &ps[i]
		p.req, p.op, p.amount = s.Payment(t)
		s.Books.Expect(p.op)
		p.orig, p.abandon = t.launchAbandoned(p.req)
		defer p.abandon()
	}
	held, err := t.WaitFor(seen, func() (bool, error) {
		st, err := t.State()
		if err != nil {
			return false, err
		}
		for _, p := range ps {
			if !heldOnCore(st, p.req.Key, p.op) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	var before, after labctl.State
	var all []Response
	if held {
		if before, err = t.State(); err != nil {
			return err
		}
		if err := t.Advance(lease + time.Second); err != nil {
			return err
		}
		if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
			return err
		}
		for _, point := range []string{labctl.SlowKeyUpdate, labctl.SlowKeyDeleteAfterRead} {
			if err := t.Arm(point, takeoverKeys); err != nil {
				return err
			}
		}
		all = t.Simultaneously(takeoverKeys*takeoverRetries, func(i int) Request { return ps[i%takeoverKeys].req })
		for _, point := range []string{labctl.SlowKeyUpdate, labctl.SlowKeyDeleteAfterRead} {
			if err := t.Arm(point, 0); err != nil {
				return err
			}
		}
		if after, err = t.State(); err != nil {
			return err
		}
	}
	sent := fmt.Sprintf("(lease %v) %d payments, each waiting on the core  (the originals)\n"+
		"while they wait: %v of lab time (their leases expire), then %d retries of each, all at once, with the slow-key-update fault holding the first %d updates of the key table for %v, and slow-key-delete-after-read the first %d deletes of it by a request that read it before, for %v; then the originals' clients hang up\n"+
		"e.g. %s", lease, takeoverKeys, lease+time.Second, takeoverRetries, takeoverKeys, fault.KeyUpdateDelay, takeoverKeys, fault.KeyDeleteDelay, ps[0].req.String())
	var got []string
	for i, p := range ps {
		p.abandon()
		rs := []Response{p.orig.Wait()}
		for j := i; j < len(all); j += takeoverKeys {
			rs = append(rs, all[j])
		}
		if toldAnyRan(p.op, rs...) {
			s.Books.Transfer(p.op, s.A.Accounts[0], s.B.Accounts[0], p.amount)
		}
		got = append(got, fmt.Sprintf("%s: the original %s, the retries %s", p.op, rs[0].Short(), Summarize(rs[1:])))
	}
	if err := t.Reconcile(sent, strings.Join(got, "\n"), s.Books); err != nil {
		return err
	}
	if !held {
		if visible, err := t.keyRowsVisible(); err != nil || !visible {
			return cmp.Or(err, t.noKeyRows("whether the originals hold their keys in progress"))
		}
		return t.CouldNotObserve("%d originals held on the core: within %v, their keys were not all in progress with their calls to the core made", takeoverKeys, seen)
	}
	for i, p := range ps {
		if calls := after.CoreCalls[p.op] - before.CoreCalls[p.op]; calls > 1 {
			return t.Fail(sent, got[i]+fmt.Sprintf("; the core was called for %s by %d of its retries", p.op, calls),
				"one retry takes an expired lease over and calls the core, once: the takeover is decided by one conditional write, which the other retries find already made")
		}
	}
	return nil
}

// heldOnCore reports whether st shows the request of key and op held on
// the core: its key in progress and its call to the core counted. A key
// only in progress may belong to a request between its claim and its
// call, which, made after the burst's count began, would be counted as a
// retry's.
func heldOnCore(st labctl.State, key, op string) bool {
	return judging.KeyInProgress(st, key) && st.CoreCalls[op] > 0
}

// otherAnswers are the answers at odd places of all: the other
// transfers of a takeover burst.
func otherAnswers(all []Response) []Response {
	var out []Response
	for i := 1; i < len(all); i += 2 {
		out = append(out, all[i])
	}
	return out
}

// checkLiveLease409 catches a takeover that does not wait for the lease to
// expire (any in-progress key is taken over), a lease measured on the
// real clock or from the wrong setting, and a lease cut short, written or
// compared to the second (time.RFC3339, not clock.Format): its last
// fraction of a second reads as expired. Last, it runs the server as two
// processes on one database, for a process that frees the keys left in
// progress when it starts (see liveAcrossRestart).
func checkLiveLease409(t *T, s Scenario) error {
	const (
		lease = 10 * time.Second
		// The claim is made this far into a second of the lab clock, so
		// that its lease ends as far into its last second; the last retry
		// comes just after that second begins, where a lease cut to the
		// second is over and the lease is not. Half a second each way:
		// the claim may come that late and stay in its second, and the
		// retry be answered that late and still come before the expiry
		// (on a busy machine, one HTTP round trip can take a few hundred
		// milliseconds).
		intoSecond = 500 * time.Millisecond
		lastRetry  = 10 * time.Millisecond
	)
	if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
		return err
	}
	books := s.Books
	req, op, amount := s.Payment(t)
	books.Expect(op)
	now, err := t.LabNow()
	if err != nil {
		return err
	}
	if err := t.SetClock(now.Truncate(time.Second).Add(time.Second + intoSecond)); err != nil {
		return err
	}
	// The lease runs from the claim, which comes after this instant; the
	// lab clock runs on with real time while a child dies and restarts,
	// so the retries are timed from here, not from the restart.
	claimedFrom, err := t.LabNow()
	if err != nil {
		return err
	}
	first, err := t.strand(req)
	if err != nil {
		return err
	}
	claimedBy, err := t.LabNow()
	if err != nil {
		return err
	}
	story := fmt.Sprintf("%s\n(lease 10s; armed crash-in-transfer: the original died inside its business write  →  %s)", req.String(), first.Short())
	// The start of the lease's last second, where the claim came in the
	// second claimedFrom is in.
	lastSecond := claimedFrom.Truncate(time.Second).Add(lease + lastRetry).Sub(claimedFrom)
	// A retry not told to wait is a contract difference, recorded, and the
	// retries after it are still sent: each must leave the money as it
	// is, the first one's execution booked if it executed (a server that
	// executes every retry pays them again).
	early := false
	for _, step := range []time.Duration{0, 8 * time.Second, lastSecond} {
		if step != 0 {
			if err := t.SetClock(claimedFrom.Add(step)); err != nil {
				return err
			}
			story += "\nthen the lab clock set to " + step.Round(time.Millisecond).String() + " after the claim (the lease has " + (lease - step).Round(time.Millisecond).String() + " left)"
		}
		r := t.Do(req)
		story += "\nthen the retry"
		if ok, why := inProgressAnswer(r); !ok && !early {
			answered, err := t.LabNow()
			if err != nil {
				return err
			}
			if !answered.Before(claimedFrom.Add(lease)) && !r.Is(http.StatusConflict, pInProgress) {
				return t.CouldNotObserve("a retry while the lease was live: the retry was answered %s after the lease expired (the lab clock runs on with real time, and the machine was slow), so whether the server took over a live lease is unknown", answered.Sub(claimedFrom.Add(lease)))
			}
			t.Differ(story, r.String(), "409 "+pInProgress+" with Retry-After: the lease is live, the original may still be running ("+why+")")
			early = true
			if toldRan(r, op) {
				books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
			}
		}
		story += "  →  " + r.Short()
		if err := t.Reconcile(story, "", books); err != nil {
			return err
		}
	}
	// More than a lease after the expiry, a retry takes the key over: its
	// lease runs from now, and a second retry while it waits on the core
	// finds it live. A key a retry already took is not stranded.
	if !early {
		if err := t.SetClock(claimedBy.Add(2*lease + 2*time.Second)); err != nil {
			return err
		}
		story += "\nthen the lab clock set to more than a lease after the lease expired"
		if err := t.liveAfterTakeover(s, req, op, amount, story); err != nil {
			return err
		}
	}
	rt, err := t.OnReplicas(2)
	if err != nil {
		return err
	}
	for _, latency := range restartLatencies {
		conclusive, err := rt.liveAcrossRestart(latency)
		if err != nil || conclusive {
			return t.earlyFirst(early, err)
		}
	}
	return t.earlyFirst(early, t.CouldNotObserve("a retry while another process's request held a live lease: the restarted process came up only after the original had answered, at every core latency tried (%v), on a machine too busy", restartLatencies))
}

// restartLatencies are the core latencies liveAcrossRestart holds its
// original with: long enough for a server process to be killed and started
// again while it waits, on a busy machine too.
var restartLatencies = []time.Duration{2 * time.Second, 6 * time.Second, 18 * time.Second}

// liveAcrossRestart is S6.live-lease-409's round on two server processes
// on one database: a payment sent through the second waits on the core,
// its lease live, while the first process is killed and started again (a
// crash, a deploy); then a retry comes through the process that started
// again. A server that frees every key left in progress when it starts,
// taking them for its own dead requests', frees the live key of a request
// the other process is running: the retry claims it afresh, calls the core
// and executes, and the original, whose completion finds its row gone,
// throws its work away. The retry must get 409 request-in-progress (or,
// had the original just completed, its stored answer), and the core be
// called once. The round is conclusive only if the process was up again
// before the original answered.
func (t *T) liveAcrossRestart(latency time.Duration) (bool, error) {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return false, err
	}
	const lease = time.Minute
	if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
		return false, err
	}
	req, op, amount := s.Payment(t)
	s.Books.Expect(op)
	req.Replica = 1
	before, err := t.coreCallsEverywhere(op)
	if err != nil {
		return false, err
	}
	orig, err := t.Hold(req, latency)
	if err != nil {
		return false, err
	}
	if !orig.Seen || !orig.Early() {
		orig.Wait()
		return false, t.Configure(labclient.Config{NoCoreLatency: true})
	}
	t.kill()
	if err := t.Restart(); err != nil {
		return false, err
	}
	// The process that started again joins the one that ran on, and
	// adopts the config they share (the lease, the core's latency).
	up := !orig.Done()
	retry := req
	retry.Replica = 0
	var second Response
	if up {
		second = t.Do(retry)
	}
	first := orig.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return false, err
	}
	after, err := t.coreCallsEverywhere(op)
	if err != nil {
		return false, err
	}
	sent := fmt.Sprintf("(two server processes on one database; POST /lab/config: lease %v)\n%s  (the original, through the second process, waiting %v on the core)\n"+
		"while it waits: the first process is killed (kill -9) and started again on the database",
		lease, req.String(), latency)
	if toldAnyRan(op, first, second) {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	}
	got := "the original " + first.Short()
	if up {
		sent += "\nthen a retry through the process that started again"
		got += "; the retry " + second.Short()
	}
	if err := t.Reconcile(sent, got, s.Books); err != nil {
		return true, err
	}
	if !up {
		return false, nil // the original answered before the process was up again: hold longer
	}
	calls := after - before
	got += fmt.Sprintf("; the core called %d times for op %s", calls, op)
	expected := "409 " + pInProgress + " with Retry-After to the retry, and one call to the core: the original's lease is live, and its process is running it; a process that starts frees nothing that another may hold (the lease frees a dead request's key)"
	if ok, _ := inProgressAnswer(second); calls > 1 || (!ok && !sameOp(first, second)) {
		return true, t.Fail(sent, got, expected)
	}
	return true, nil
}

// liveAfterTakeover sends req, whose key's lease expired more than a lease
// ago, and holds it on the core; while it waits there, it sends req again.
// The first retry takes the key over with a lease of its own, which runs
// from now: the second gets 409 request-in-progress, and the core is called
// once. A takeover that extends the expired lease (old expiry plus the
// lease) writes one already over, and the second retry takes the key over
// too. A server that takes no key over (stage 5) answers both at once:
// there is no new lease to judge.
func (t *T) liveAfterTakeover(s Scenario, req Request, op string, amount int64, story string) error {
	const latency, seen = time.Second, 5 * time.Second
	before, err := t.State()
	if err != nil {
		return err
	}
	if err := t.Configure(labclient.Config{CoreLatency: latency}); err != nil {
		return err
	}
	takeover := t.Launch(req)
	onCore, err := t.WaitFor(seen, func() (bool, error) {
		st, err := t.State()
		return takeover.Done() || st.CoreCalls[op] > before.CoreCalls[op], err
	})
	if err != nil {
		return err
	}
	var second Response
	early := onCore && !takeover.Done()
	if early {
		second = t.Do(req)
	}
	first := takeover.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return err
	}
	after, err := t.State()
	if err != nil {
		return err
	}
	story += fmt.Sprintf(", and a retry (waiting %v on the core)", latency)
	got := "the first retry " + first.Short()
	if early {
		story += "\nwhile it waits, a second retry"
		got += "; the second retry " + second.Short()
	}
	if toldAnyRan(op, first, second) {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	}
	if err := t.Reconcile(story, got, s.Books); err != nil {
		return err
	}
	if !early {
		return nil
	}
	expected := "409 " + pInProgress + " with Retry-After to the second retry: the first took the key over with a lease that runs from the takeover (now plus the lease), live while it waits; the core is called once"
	if calls := after.CoreCalls[op] - before.CoreCalls[op]; calls > 1 {
		return t.Fail(story, fmt.Sprintf("%s; the core was called for this payment by %d of the retries", got, calls), expected)
	}
	if ok, why := inProgressAnswer(second); !ok && !sameOp(first, second) {
		return t.Fail(story, second.String(), expected+" ("+why+")")
	}
	return nil
}

// checkLateOriginalFenced catches a completion that does not prove the
// lease is still the request's own (the original that outlived its lease
// completes beside the retry that took it over: twice the money, or the
// retry's work thrown away), and a release that does not (the original,
// refused at its completion, deletes the key the retry holds, and a third
// attempt claims it afresh and executes beside the retry), whether the
// original gives the key back after it was refused at its completion or
// after it failed, having read that it still held the key just before the
// retry took it over; the rounds that hold the original's release and its
// completion run the server as two processes on one database, the retry
// through the second, which a mutex in the first process's memory does
// not hold back. It holds a transfer, then a deposit
// (a completion fenced on one route only), and the refused original must
// be told to retry, 409 request-in-progress with Retry-After. And it
// catches a completion that also asks for a live lease: an original that
// outlived its lease, whose key no retry took over, is refused, and its
// retry calls the core a second time for one payment. Last, on
// PostgreSQL, it catches a takeover that does not ask for the key in
// progress: a late original that completes while a retry's takeover waits
// has its key opened again, and pays twice (see completedBeforeTakeover);
// and a release that reads the owner in a subquery, which begun before a
// retry's takeover commits deletes the retry's claim (see
// releasedBeforeTakeoverCommits).
func checkLateOriginalFenced(t *T) error {
	var rounds []func() error
	for _, p := range payments {
		rounds = append(rounds, func() error {
			return t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
				return t.lateOriginalFenced(s, latency, p)
			})
		})
	}
	for _, p := range append(slices.Clip(payments), mostOfTheBalance) {
		rounds = append(rounds, func() error {
			return t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
				return t.lateOriginalAfterRetry(s, latency, p)
			})
		})
	}
	rounds = append(rounds, func() error { return t.WhileHeld(1_000_000, t.lateOriginalAlone) })
	// The rounds that hold the original's release or completion run the
	// server as two processes on one database, the retry through the
	// second: a mutex in the first process's memory, which its claims
	// share with its release or its completion, keeps no retry of the
	// other process from taking the key over between the original's read
	// of its lease and its write.
	var rt *T
	onReplicas := func(pgOnly bool, try func(*T, Scenario, time.Duration) (bool, error)) func() error {
		return func() error {
			if rt == nil {
				r, err := t.OnReplicas(2)
				if err != nil {
					return err
				}
				rt = r
			}
			if pgOnly {
				st, err := rt.State()
				if err != nil || st.Engine == labdb.SQLite {
					return err
				}
			}
			return rt.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
				return try(rt, s, latency)
			})
		}
	}
	rounds = append(rounds,
		onReplicas(false, (*T).releasedAfterTakeover),
		// On SQLite one transaction's write lock holds back the other's:
		// these rounds are not tried there (see each).
		onReplicas(true, (*T).takenOverBeforeCompletion),
		onReplicas(true, (*T).completedBeforeTakeover),
		onReplicas(true, (*T).releasedBeforeTakeoverCommits))
	// A round that could not act while its original was in flight (a
	// machine too busy for every latency WhileHeld tries) does not stop
	// the others: a later round may still catch the server. It runs once
	// more after them, when the busy moment may have passed, and the check
	// says what it could not observe only if it still cannot.
	return unseenAgainWhile(t.timeLeft(lateRoundTime), rounds...)
}

// lateRoundTime is the time a round of S6.late-original-fenced may take
// at the longest latency WhileHeld tries, on a busy machine: a round that
// holds a release holds the original 2.7 s and the retry twice that.
// Once a round could not observe, the next starts only with this much
// of the check's time left.
const lateRoundTime = 20 * time.Second

// timeLeft returns whether at least d of the check's time is left.
func (t *T) timeLeft(d time.Duration) func() bool {
	return func() bool {
		end, ok := t.ctx.Deadline()
		return !ok || time.Until(end) >= d
	}
}

// unseenAgainWhile runs rounds in turn and returns the first failure (or
// error). A round that could not observe what it needs does not stop the
// others, and once they have run it runs once more; it is returned at the
// end if it still could not. Once a round could not observe, the next
// runs only while more() holds (time is left for it: see T.timeLeft):
// what could not be seen is said, rather than the check's time running
// out in a round that would not change that answer unless it failed.
func unseenAgainWhile(more func() bool, rounds ...func() error) error {
	var unseen error
	var again []func() error
	for _, round := range rounds {
		if unseen != nil && !more() {
			return unseen
		}
		err := round()
		var u *judging.Unobserved
		if errors.As(err, &u) {
			unseen = cmp.Or(unseen, err)
			again = append(again, round)
			continue
		}
		if err != nil {
			return err
		}
	}
	var still error
	for _, round := range again {
		if !more() {
			return unseen
		}
		err := round()
		var u *judging.Unobserved
		if errors.As(err, &u) {
			still = cmp.Or(still, err)
			continue
		}
		if err != nil {
			return err
		}
	}
	return still
}

// lateOriginalAfterRetry is S6.late-original-fenced's round in which the
// retry that took the key over has executed and answered before the late
// original wakes up: the original's completion finds the key completed by
// the retry, no longer in progress, and must move no money. The other
// rounds wake the original while the retry still holds the key in
// progress, and a server whose refused original looks for the retry's
// stored answer, takes it as its own and commits its transaction (money
// and all), or whose completion asks for this request's owner or for none
// (a completed key holds none), passes them and pays here twice. The
// round is conclusive only if the retry answered while the original
// still waited on the core. It holds a transfer, then a deposit (draw):
// a server may take the retry's answer on one route only. Last, a transfer
// of most of the balance (mostOfTheBalance), which the retry's execution
// leaves too little for: the original's own business write is refused,
// and a server that fences only a completion that moved money completes
// the key with that refusal, over the retry's 201, so the last retry,
// which must get the retry's answer, is told that a payment which ran was
// refused.
func (t *T) lateOriginalAfterRetry(s Scenario, latency time.Duration, draw func(*T, Scenario) (Request, func())) (bool, error) {
	lease := t.drawLease(5, 60)
	if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
		return false, err
	}
	req, executed := draw(t, s)
	late, held, err := t.retryBeforeLateOriginal(req, latency, lease)
	if !held || err != nil {
		return err != nil, err
	}
	retry, first, last, waited := late.retry, late.first, late.last, late.tookOver
	sent := fmt.Sprintf("(lease %v)\n%s  (the original, waiting %v on the core)\n"+
		"while it waits: %v of lab time (its lease expires), and the retry, with the core quick again  →  %s\n"+
		"then the original wakes up and answers  %s\n"+
		"then one more retry  →  %s",
		lease, req.String(), latency, lease+time.Second, retry.Short(), first.Short(), last.Short())
	got := "the retry " + retry.Short() + "; the original " + first.Short() + "; the last retry " + last.Short()
	if toldAnyRan(sentOp(req), retry, first, last) {
		executed()
	}
	const fenced = "a late original is fenced whatever its retry has done meanwhile: still running or already answered, the retry holds the key or has completed it, and the original's transaction, its money included, rolls back; one that takes the completed key's answer as its own and commits pays a second time"
	if err := t.Reconcile(sent, got, s.Books); err != nil {
		return waited, because(err, fenced)
	}
	if !toldRan(retry, sentOp(req)) {
		return waited, nil
	}
	if !retry.Is(http.StatusCreated, "") {
		// Told it ran in another 2xx: a contract difference; the last
		// retry is still compared with what the retry was told.
		t.Differ(sent, got, "201 Created to the retry that took the key over: it holds the lease, and it executes")
	}
	if err := t.replayOfAnother2xx(sent, retry, last, "the retry's",
		"the retry's "+firstGiven(retry)+", to the last retry: the retry executed and completed the key, and the late original, whatever its own business write found (a transfer of most of the balance finds it spent by the retry, and is refused), completes nothing"); err != nil {
		return true, because(err, fenced+"; a refusal moves no money, but its completion is fenced all the same: completed over the retry's, it tells every later retry that a payment which ran was refused")
	}
	return waited, nil
}

// mostOfTheBalance is a payment of lateOriginalAfterRetry: a transfer of
// more than half of the source's opening balance, and no more than all of
// it, so that the late original, woken after its retry executed, finds too
// little left and is refused insufficient funds. A server that fences only
// a completion that moved money completes the key with that refusal, over
// the retry's stored 201.
func mostOfTheBalance(t *T, s Scenario) (Request, func()) {
	amount, key, op := t.Amount(s.Opening/2+1, s.Opening), t.Key(), t.Op()
	s.Books.Expect(op)
	req := Transfer(s.A, key, TransferBody(s.A.Accounts[0], s.B.Accounts[0], amount, op))
	return req, func() { s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount) }
}

// lateOriginalAlone is S6.late-original-fenced's round in which nobody
// takes the key over: a transfer outlives its lease while it waits on the
// core, and no retry comes. An expired lease lets a retry take the key
// over; until one does, the key is still the original's, and the original
// completes. A completion that also asks for a live lease refuses it: the
// original rolls back and is told to retry, and its client's retry takes
// the key over and calls the core a second time for one payment, a side
// effect no rollback undoes (with a real core, a second payment attempt).
// The round is conclusive only if the clock moved before the original's
// core wait could have ended: then its completion saw the lease expired.
func (t *T) lateOriginalAlone(s Scenario, latency time.Duration) (bool, error) {
	lease := t.drawLease(5, 60)
	if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
		return false, err
	}
	req, op, amount := s.Payment(t)
	s.Books.Expect(op)
	before, err := t.State()
	if err != nil {
		return false, err
	}
	orig, held, err := t.outliveLease(req, latency, lease)
	if !held || err != nil {
		return err != nil, err
	}
	moved := time.Since(orig.sent) < latency
	first := orig.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return false, err
	}
	retry := t.Do(req)
	after, err := t.State()
	if err != nil {
		return false, err
	}
	calls := after.CoreCalls[op] - before.CoreCalls[op]
	sent := fmt.Sprintf("(lease %v)\n%s  (the original, waiting %v on the core)\n"+
		"while it waits: %v of lab time (its lease expires), and no retry\n"+
		"the original wakes up and answers  %s\n"+
		"then its client's retry  →  %s",
		lease, req.String(), latency, lease+time.Second, first.Short(), retry.Short())
	got := fmt.Sprintf("the original %s; the retry %s; the core called %d times for op %s", first.Short(), retry.Short(), calls, op)
	if toldAnyRan(op, first, retry) {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	}
	if err := t.Reconcile(sent, got, s.Books); err != nil {
		return true, err
	}
	if !moved && toldRan(first, op) {
		return false, nil // the original may have completed before the clock moved: wait longer
	}
	const completes = "201 Created to the original: its lease expired while it waited, but no retry took its key over, so the key is still its own, and it completes; an expired lease lets a retry take the key over, it does not undo the original's work (refused, the original threw its core call away, and the retry called the core again for one payment)"
	if !toldRan(first, op) {
		return true, because(t.Fail(sent, got, completes),
			"the owner is the fence, and the lease's expiry only the moment from which a retry may take the key over: a completion that also asks for a live lease refuses every request slower than the lease, retried or not, and its retry calls the core a second time for one payment, a side effect no rollback undoes")
	}
	if !first.Is(http.StatusCreated, "") {
		// Told it completed in another 2xx: a contract difference; its
		// retry is compared with that answer, and the core calls still
		// judge.
		t.Differ(sent, got, completes)
		if err := t.replayOfAnother2xx(sent, first, retry, "the original's", "the original's "+firstGiven(first)+", to its retry"); err != nil {
			return true, err
		}
	} else if d := ownAnswerMismatch(first, retry, "the original's"); d != "" {
		return true, t.Fail(sent, retry.String()+"\n"+d, "the original's stored 201, to its retry")
	}
	if calls > 1 {
		return true, t.Fail(sent, got, "one call to the core for op "+op+": the original's; its retry is answered with the stored 201, and calls the core no more")
	}
	return true, nil
}

// outliveLeaseHoldingUpdate is outliveLease with held-key-update armed
// once the original's lease has expired, and the core quick again for the
// requests that follow: the start of the rounds of S6.late-original-fenced
// that hold an update of the key table. It also reports whether the fault
// was armed with half the original's core wait still ahead: then it was in
// place before the original's completion; armed later (a busy machine, a
// slow purge behind the clock's move), the original may have completed
// already, and says nothing of the server: a longer hold tries again. The
// caller disarms the fault, which lets a held statement go, however the
// round ends.
func (t *T) outliveLeaseHoldingUpdate(req Request, latency, lease time.Duration) (orig *Held, held, armedInTime bool, err error) {
	orig, held, err = t.outliveLease(req, latency, lease)
	if !held || err != nil {
		return orig, held, false, err
	}
	if err := t.Arm(labctl.HeldKeyUpdate, 1); err != nil {
		return orig, true, false, err
	}
	armedInTime = orig.Early()
	return orig, true, armedInTime, t.Configure(labclient.Config{NoCoreLatency: true})
}

// takenOverBeforeCompletion is S6.late-original-fenced's round on
// PostgreSQL that catches a completion proven by an earlier read: an
// original that outlived its lease reads that it still owns the key, in
// its business transaction, and completes the key by its id alone. At
// READ COMMITTED a retry's takeover can commit between the read and the
// completion, and both requests then move the money. The round holds the
// original's completion before it runs (held-key-update), once its
// transaction has done all it does before it; sends the retry through the
// second process of the target (see checkLateOriginalFenced), which takes
// the key over and calls the core; then lets the completion run. A
// completion that proves the lease in its own statement finds it gone
// and rolls back, and the retry executes once; one that read it first, a
// mutex in the first process's memory around the read and the write or
// not, completes the key too, and both move the money. On SQLite the original's
// transaction holds the write lock, and the retry's takeover waits for it:
// the round is not tried there. A server that completes its key in no
// UPDATE of the key table never reaches the held statement, and the
// round sees nothing to judge.
func (t *T) takenOverBeforeCompletion(s Scenario, latency time.Duration) (bool, error) {
	lease := t.drawLease(5, 60)
	if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
		return false, err
	}
	req, op, amount := s.Payment(t)
	s.Books.Expect(op)
	executed := func() { s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount) }
	orig, held, armedInTime, err := t.outliveLeaseHoldingUpdate(req, latency, lease)
	// Disarming lets the held completion go, whatever happens here.
	defer t.Arm(labctl.HeldKeyUpdate, 0)
	if !held || err != nil {
		return err != nil, err
	}
	completing, err := t.Fired(latency+10*time.Second, orig.Done, labctl.HeldKeyUpdate)
	if err != nil {
		return true, err
	}
	if completing == "" || orig.Done() {
		// The original answered without an update of the key table: there
		// was no completion to hold, or it ran before the fault was armed.
		orig.Wait()
		if err := t.Arm(labctl.HeldKeyUpdate, 0); err != nil {
			return true, err
		}
		first := t.Do(req)
		if toldRan(first, sentOp(req)) {
			executed()
		}
		return armedInTime, t.Reconcile(req.String(), first.Short(), s.Books)
	}
	before, err := t.coreCallsEverywhere(op)
	if err != nil {
		return true, err
	}
	// The retry goes through the second process, where one runs.
	through := req
	through.Replica = 1
	retry := t.Launch(through)
	tookOver, known, err := t.calledCore(retry, op, before)
	if err != nil {
		return true, err
	}
	if err := t.Arm(labctl.HeldKeyUpdate, 0); err != nil {
		return true, err
	}
	first, second := orig.Wait(), retry.Wait()
	last := t.Do(req)
	sent := fmt.Sprintf("(two server processes on one database; lease %v)\n%s  (the original, waiting %v on the core)\n"+
		"while it waits: %v of lab time (its lease expires); when its core call is over, the first statement that updates the key table, its completion, waits (held-key-update)\n"+
		"then the retry, the same request, through the second process%s\n"+
		"then the completion runs: the original answers  %s\nthe retry answers  %s\nthen one more retry  →  %s",
		lease, req.String(), latency, lease+time.Second,
		map[bool]string{true: ", which takes the key over and calls the core", false: ", which does not reach the core"}[tookOver],
		first.Short(), second.Short(), last.Short())
	got := "the original " + first.Short() + "; the retry " + second.Short()
	if toldAnyRan(sentOp(req), first, second, last) {
		executed()
	}
	// A retry that neither reached the core, nor answered, nor waited
	// for a lock within retakeWait (a machine too busy) saw the
	// completion run before any takeover: a longer hold tries again.
	return known, because(t.Reconcile(sent, got, s.Books),
		"an original that outlived its lease proves it still holds the key in the statement that completes it (a condition on the owner in the UPDATE): a read earlier in its transaction goes stale when a retry takes the key over before the UPDATE runs, and both requests move the money")
}

// completedBeforeTakeover is S6.late-original-fenced's round on
// PostgreSQL that catches a takeover whose UPDATE asks for the lease
// expired but not for the key in progress, the state having been read
// before: a retry reads the key in progress, its lease expired, and
// before its takeover writes, the late original completes. At READ
// COMMITTED the takeover's UPDATE then reads the completed row, and one
// that does not ask for in_progress matches it wherever the completion
// leaves the lease's expiry, and opens the key again if it writes the
// state: the retry executes, and the money moves twice. The original goes
// through the second process of the target; the retry through the first,
// where the round holds its first update of the key table
// (held-key-update), before it runs, until the original has answered, or
// waits for a lock the retry's transaction took before the takeover (a
// read of the key FOR UPDATE), which the key serializes as it should. A
// takeover that asks for the key in progress matches nothing then, and
// the retry is told to retry, and a last retry gets the original's
// answer. On SQLite the retry's claim holds the write lock, and the
// original's completion waits for it: the round is not tried there.
func (t *T) completedBeforeTakeover(s Scenario, latency time.Duration) (bool, error) {
	req, op, amount := s.Payment(t)
	s.Books.Expect(op)
	lease := t.drawLease(5, 60)
	if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
		return false, err
	}
	original := req
	original.Replica = 1
	orig, held, _, err := t.outliveLeaseHoldingUpdate(original, latency, lease)
	// Disarming lets the held takeover go, whatever happens here.
	defer t.Arm(labctl.HeldKeyUpdate, 0)
	if !held || err != nil {
		return err != nil, err
	}
	retry := t.Launch(req)
	takingOver, err := t.Fired(latency+10*time.Second, retry.Done, labctl.HeldKeyUpdate)
	if err != nil {
		return true, err
	}
	// A takeover held, or a retry answered with none (a server that takes
	// no key over), while the original still ran says what it says; once
	// the original has completed, the retry reads the key completed, and
	// a longer hold tries again.
	conclusive := !orig.Done()
	// The original answers, or waits for a lock the retry's transaction
	// took before its held takeover (a read of the key FOR UPDATE, say),
	// which only letting the takeover go ends: not the fault's own cap.
	if err := t.answeredOrBlocked(orig.Pending); err != nil {
		return true, err
	}
	answered := orig.Done()
	if err := t.Arm(labctl.HeldKeyUpdate, 0); err != nil {
		return true, err
	}
	first := orig.Wait()
	second, last := retry.Wait(), t.Do(req)
	if toldAnyRan(op, first, second, last) {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	}
	sent := fmt.Sprintf("(two server processes on one database; lease %v)\n%s  (the original, through the second process, waiting %v on the core)\n"+
		"while it waits: %v of lab time (its lease expires)\n"+
		"then the retry, the same request, through the first process, where the first statement that updates the key table waits (held-key-update)%s\n"+
		"%s  %s\nthen one more retry  →  %s",
		lease, req.String(), latency, lease+time.Second,
		map[bool]string{true: ", its takeover", false: ", which does not reach one"}[takingOver != ""],
		fmt.Sprintf(map[bool]string{
			true:  "the original answers  %s\nthen the held statement runs: the retry answers",
			false: "the original waits for a lock the retry's transaction holds\nthen the held statement runs: the original answers  %s\nthe retry answers",
		}[answered], first.Short()),
		second.Short(), last.Short())
	got := "the original " + first.Short() + "; the retry " + second.Short() + "; one more retry " + last.Short()
	return conclusive, because(t.Reconcile(sent, got, s.Books),
		"a takeover asks, in the statement that writes the new owner, for the key still in progress as well as for its lease expired: the state read before goes stale when the late original completes in between, and a takeover that matches the completed key opens it again, and the payment runs twice")
}

// releaseRound is an original of S6.late-original-fenced whose release is
// held (see holdRelease): its request, op and lease, the fault point that
// holds its release, and executed, which puts its payment in the books.
type releaseRound struct {
	req      Request
	op       string
	orig     *Held
	held     string
	executed func()
	lease    time.Duration
}

// releaseHolds are the points that hold a release: its DELETE of the key,
// or the UPDATE that ends its lease so that the next retry takes the key
// over at once.
var releaseHolds = []string{labctl.HeldKeyDelete, labctl.HeldKeyUpdate}

// holdRelease is the start of the rounds of S6.late-original-fenced that
// hold an original's release: a payment outlives its lease while it waits
// on the core, its business write fails (fail-in-transfer), and the first
// statement that deletes from or updates the key table, its release, is
// held before it runs, once the release has read all it reads; the point
// of the other kind is disarmed, a takeover's to run. Before, it calls
// armed, if any, to arm what else the round holds; then it sets the
// core's latency twice the original's for the retry that follows: now,
// before a release held inside a transaction holds SQLite's write lock,
// which the lab's write of the config shared by the processes would wait
// for. The caller defers letReleaseGo. If the original answers without a
// delete or an update of the key table (it did not fail, or gave its key
// back otherwise), it judges the money with one more retry and returns no
// held point, with whether the faults were armed in time (half the
// original's core wait still ahead: see takenOverBeforeCompletion).
func (t *T) holdRelease(s Scenario, latency time.Duration, armed func() error) (r releaseRound, conclusive bool, err error) {
	r.lease = t.drawLease(5, 60)
	if err := t.Configure(labclient.Config{Lease: r.lease}); err != nil {
		return r, false, err
	}
	var amount int64
	r.req, r.op, amount = s.Payment(t)
	s.Books.Expect(r.op)
	r.executed = func() { s.Books.Transfer(r.op, s.A.Accounts[0], s.B.Accounts[0], amount) }
	orig, inFlight, err := t.outliveLease(r.req, latency, r.lease)
	if !inFlight || err != nil {
		return r, err != nil, err
	}
	r.orig = orig
	for _, point := range append([]string{labctl.FailInTransfer}, releaseHolds...) {
		if err := t.Arm(point, 1); err != nil {
			return r, true, err
		}
	}
	if armed != nil {
		if err := armed(); err != nil {
			return r, true, err
		}
	}
	armedInTime := orig.Early()
	if err := t.Configure(labclient.Config{CoreLatency: 2 * latency}); err != nil {
		return r, true, err
	}
	held, err := t.Fired(latency+10*time.Second, orig.Done, releaseHolds...)
	if err != nil {
		return r, true, err
	}
	if held == "" || orig.Done() {
		first := orig.Wait()
		if err := t.letReleaseGo(); err != nil {
			return r, true, err
		}
		if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
			return r, true, err
		}
		last := t.Do(r.req)
		if toldAnyRan(r.op, first, last) {
			r.executed()
		}
		return r, armedInTime, t.Reconcile(r.req.String(), "the original "+first.Short()+"; a retry "+last.Short(), s.Books)
	}
	for _, point := range releaseHolds {
		if point != held {
			if err := t.Arm(point, 0); err != nil {
				return r, true, err
			}
		}
	}
	r.held = held
	return r, true, nil
}

// letReleaseGo disarms every point holdRelease armed, which lets a held
// release go, and the original's business write succeed again; it
// returns the first error.
func (t *T) letReleaseGo() error {
	var first error
	for _, point := range append([]string{labctl.FailInTransfer}, releaseHolds...) {
		if err := t.Arm(point, 0); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// releaseAnswers are what the attempts of a round of holdRelease were
// answered: the original (first), the third attempt, sent while the retry
// still waits on the core if inFlight, the retry (second), and one more
// retry sent after them all (last).
type releaseAnswers struct {
	first, third, second, last Response
	inFlight                   bool
}

// besideTheRetry waits for the answer of r's original, whose release the
// round has let go, then, with the core quick again, sends a third attempt
// while retry, which took the key over, still waits on the core; then it
// waits for the retry's answer and sends one more retry.
func (t *T) besideTheRetry(r releaseRound, retry *Pending) (a releaseAnswers, err error) {
	a.first = r.orig.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return a, err
	}
	a.third = t.Do(r.req)
	a.inFlight = !retry.Done()
	a.second = retry.Wait()
	a.last = t.Do(r.req)
	return a, nil
}

// reconcileRelease puts r's payment in the books if any of a was told it
// ran, and reconciles them with what the round did (sent); it returns
// what the attempts were answered.
func (t *T) reconcileRelease(s Scenario, r releaseRound, a releaseAnswers, sent string) (got string, err error) {
	got = "the original " + a.first.Short() + "; the third attempt " + a.third.Short() + "; the retry " + a.second.Short()
	if toldAnyRan(r.op, a.first, a.third, a.second, a.last) {
		r.executed()
	}
	return got, t.Reconcile(sent, got, s.Books)
}

// releasedAfterTakeover is S6.late-original-fenced's round that catches a
// release proven by an earlier read: an original that outlived its lease
// fails after its core call, reads that it still holds the key, and
// deletes the key by its id alone. A retry that takes the key over
// between the read and the delete loses its claim, and a third attempt
// claims the key afresh and executes while the retry still runs. The
// round makes the original's business write fail (fail-in-transfer) and
// holds its first delete of the key table (held-key-delete), or its first
// update of it, for a release that ends the lease rather than delete the
// key (held-key-update), before it runs, once the release has read all it
// reads; sends the retry through the second process of the target (see
// checkLateOriginalFenced), which takes the key over and waits on the
// core; then lets the statement run and sends a third attempt. A release
// that proves the lease in its own statement changes nothing, and the
// third attempt hears 409 request-in-progress. A release outside a
// transaction holds no lock while it waits, on either engine, and a mutex
// in the first process's memory, shared by its release and its claims,
// holds back no retry of the second; one whose read and delete share a
// transaction holds SQLite's write lock (or, on PostgreSQL, one whose
// read locks the row), the retry waits for it, and the round, which saw
// no takeover, judges only the money. A retry that is only slow (a busy
// machine) is waited for, not taken for one waiting on a lock (see
// calledCore): let go before any takeover, a release proven by an earlier
// read would delete nothing but its own key, and pass. A server that
// gives the key back in no DELETE or UPDATE never reaches a held
// statement, and the round sees nothing to judge.
func (t *T) releasedAfterTakeover(s Scenario, latency time.Duration) (bool, error) {
	r, conclusive, err := t.holdRelease(s, latency, nil)
	// Disarming lets the held release go, whatever happens here.
	defer t.letReleaseGo()
	if r.held == "" || err != nil {
		return conclusive, err
	}
	req, op, held := r.req, r.op, r.held
	before, err := t.coreCallsEverywhere(op)
	if err != nil {
		return true, err
	}
	// The retry goes through the second process, where one runs.
	through := req
	through.Replica = 1
	retry := t.Launch(through)
	tookOver, known, err := t.calledCore(retry, op, before)
	if err != nil {
		return true, err
	}
	tookOver = tookOver && !retry.Done()
	if err := t.Arm(held, 0); err != nil {
		return true, err
	}
	a, err := t.besideTheRetry(r, retry)
	if err != nil {
		return true, err
	}
	sent := r.story(latency, a,
		map[bool]string{true: ", which takes the key over and calls the core", false: ", which does not reach the core"}[tookOver],
		"then the release runs")
	got, err := t.reconcileRelease(s, r, a, sent)
	if err != nil {
		return true, err
	}
	if !tookOver {
		// The retry waited for the held release (a lock its transaction
		// holds), or answered without a takeover: the release ran before
		// any takeover, and the money is all there is to judge. One that
		// did none of that within retakeWait (a machine too busy) is no
		// proof of a lock: a longer hold tries again.
		return known, nil
	}
	return t.thirdAttemptBesideTheRetry(sent, got, a,
		"an original that failed proves it still holds the key in the statement that gives it back (a condition on the owner in that DELETE or UPDATE): a read just before goes stale when a retry takes the key over before the statement runs, and the retry loses its claim")
}

// releasedBeforeTakeoverCommits is S6.late-original-fenced's round on
// PostgreSQL that catches a release proven by a subquery: an original
// that failed gives its key back in one DELETE (or an UPDATE that ends
// the lease) whose condition on the owner reads the key's lease_owner in
// a SELECT inside the statement, not the row's own column. At READ
// COMMITTED the subquery reads the rows as they were when the statement
// began; a release that begins while a retry's takeover is written but
// not yet committed waits for the row the takeover locked, and once the
// takeover commits PostgreSQL checks again only the conditions on the row
// itself, not the subquery's owner, read stale: the release removes the
// retry's claim, and a third attempt claims the key afresh and executes
// while the retry still runs. The round makes the original's business
// write fail (fail-in-transfer) and holds its release before it runs
// (held-key-delete or held-key-update), as releasedAfterTakeover does;
// sends the retry through the second process of the target, where the
// COMMIT of its takeover is held (held-key-commit); lets the release run
// until it waits for the retry's row (GET /lab/state's lock_waits), then
// lets the takeover commit, and sends a third attempt while the retry
// waits on the core. A release that names the owner in a condition on
// the row's own column checks it again on the committed row, deletes
// nothing, and the third attempt hears 409 request-in-progress. On SQLite
// the takeover's transaction holds the write lock, and a release begins
// only once it has committed: the round is not tried there. A server that
// gives the key back in no DELETE or UPDATE, or whose retry commits no
// write of the key table, never reaches a held point, and the round
// judges only the money; so does one whose release read the row with a
// lock (SELECT … FOR UPDATE in its transaction), whose retry waits for
// that lock (lock_waits) and takes nothing over before the release.
func (t *T) releasedBeforeTakeoverCommits(s Scenario, latency time.Duration) (bool, error) {
	r, conclusive, err := t.holdRelease(s, latency, func() error {
		return t.armReplica(0, labctl.HeldKeyCommit, 1)
	})
	// Disarming lets a held statement or commit go, whatever happens here.
	defer t.letReleaseGo()
	defer t.armReplica(0, labctl.HeldKeyCommit, 0)
	if r.held == "" || err != nil {
		return conclusive, err
	}
	req, orig, held := r.req, r.orig, r.held
	// The retry goes through the second process, where its takeover
	// waits at its COMMIT.
	through := req
	through.Replica = 1
	retry := t.Launch(through)
	// Or the retry waits for a lock the held release's transaction holds
	// (a release whose read locked the row): it takes nothing over
	// before the release, as in releasedAfterTakeover (see calledCore).
	blocked, lerr := false, error(nil)
	committing, err := t.firedOn(t.replicaLabs()[0], retakeWait, func() bool {
		if retry.Done() {
			return true
		}
		blocked, lerr = t.lockWaited()
		return blocked || lerr != nil
	}, labctl.HeldKeyCommit)
	if err == nil {
		err = lerr
	}
	if err != nil {
		return true, err
	}
	// Known: the takeover waits at its COMMIT, the retry waits for the
	// release's lock, or it answered with no commit of a write of the
	// key table; else the machine is too busy to tell.
	known := committing != "" || blocked || retry.Done()
	// The release runs, and waits for the row the uncommitted takeover
	// locked (or answers: a release that matched no row at its start).
	if err := t.Arm(held, 0); err != nil {
		return true, err
	}
	waited := false
	if committing != "" {
		if err := t.answeredOrBlocked(orig.Pending); err != nil {
			return true, err
		}
		// Answered, the release began after the takeover committed, or
		// matched no row when it began; else it waits for the row, or
		// the machine is too busy to tell.
		waited = !orig.Done()
		known = !waited
		if waited {
			waited, err = t.lockWaited()
			if err != nil {
				return true, err
			}
			known = waited
		}
	}
	if err := t.armReplica(0, labctl.HeldKeyCommit, 0); err != nil {
		return true, err
	}
	a, err := t.besideTheRetry(r, retry)
	if err != nil {
		return true, err
	}
	sent := r.story(latency, a,
		map[bool]string{true: ", whose takeover waits at its COMMIT (held-key-commit)", false: ", whose takeover's COMMIT was not seen"}[committing != ""],
		"then the release runs"+map[bool]string{true: ", and waits for the key's row, which the takeover locked", false: ""}[waited]+"; then the takeover commits")
	got, err := t.reconcileRelease(s, r, a, sent)
	if err != nil {
		return true, err
	}
	if !waited {
		// No release waited for the uncommitted takeover: the retry took
		// no key over, or the release matched no row when it began, and
		// the money is all there is to judge; or the machine was too busy
		// to see the wait, and a longer hold tries again.
		return known, nil
	}
	return t.thirdAttemptBesideTheRetry(sent, got, a,
		"an original that failed proves it still holds the key by a condition on the row's own lease_owner in the statement that gives it back: an owner read in a subquery of that statement is read as the rows were when it began, and PostgreSQL, once the retry's takeover it waited for commits, checks again only the row's own columns, so the release removes the retry's claim")
}

// story is what a round of holdRelease sent, and when, for its failure:
// retried says what became of the retry through the second process, and
// released what happened once the held release was let go, before the
// original answered.
func (r releaseRound) story(latency time.Duration, a releaseAnswers, retried, released string) string {
	return fmt.Sprintf("(two server processes on one database; lease %v)\n%s  (the original, waiting %v on the core)\n"+
		"while it waits: %v of lab time (its lease expires); when its core call is over, its business write fails (fail-in-transfer), and the first statement that deletes from or updates the key table, its release of the key, waits (%s)\n"+
		"then the retry, the same request, through the second process, waiting %v on the core%s\n"+
		"%s: the original answers  %s\n"+
		"a third attempt, while the retry still waits  →  %s\n"+
		"the retry answers  %s\n"+
		"then one more retry  →  %s",
		r.lease, r.req.String(), latency, r.lease+time.Second, r.held, 2*latency, retried,
		released, a.first.Short(), a.third.Short(), a.second.Short(), a.last.Short())
}

// thirdAttemptBesideTheRetry judges a round of holdRelease whose retry
// took the key over and was still waiting on the core when the third
// attempt was answered (else a longer hold tries again: a busy machine):
// a third attempt told 201 for an operation of its own was let in by the
// original's release of a key it no longer held (why says how). The books
// were reconciled before: the money moved as the clients were told, and
// this is a contract difference, recorded; the check goes on.
func (t *T) thirdAttemptBesideTheRetry(sent, got string, a releaseAnswers, why string) (bool, error) {
	if !a.inFlight {
		return false, nil
	}
	if a.third.Is(http.StatusCreated, "") && !sameOp(a.third, a.second) {
		return true, t.note(because(t.Fail(sent, got, "409 "+pInProgress+" to the third attempt: the retry took the key over and holds a live lease; the original, which failed, must not give back a key it no longer holds"), why))
	}
	return true, nil
}

// retakeWait is how long calledCore waits for a retry to take a key over
// and call the core, while nothing says it waits for a lock: longer than
// SQLite's busy timeout (sqlitedb.BusyTimeout), after which a writer
// waiting for the write lock gives up and answers, and inside a held
// statement's own cap (fault.HeldStatementMax), so that the statement runs
// when the check lets it go, not before.
const retakeWait = 20 * time.Second

// calledCore waits for retry, a request that takes a key over, to call
// the core for op, counted from before in every process of the target
// (coreCallsEverywhere): it has then taken the key over, and its claim
// has committed. It reports whether it did, and whether what the retry did
// is known: it called the core, it answered first (and did not), or it
// waits for a lock another transaction holds, the held statement's, which
// lets it go only once the check lets the statement go. PostgreSQL shows
// such a wait (GET /lab/state's lock_waits); on SQLite a writer waiting
// for the write lock shows nothing, and answers busy after the busy
// timeout. A retry that is merely slow, on a busy machine, is waited for,
// up to retakeWait; past that, what it did is unknown.
func (t *T) calledCore(retry *Pending, op string, before int64) (called, known bool, err error) {
	blocked := false
	_, err = t.WaitFor(retakeWait, func() (bool, error) {
		calls, err := t.coreCallsEverywhere(op)
		if err != nil {
			return false, err
		}
		if called = calls > before; called || retry.Done() {
			return true, nil
		}
		blocked, err = t.lockWaited()
		return blocked, err
	})
	return called, called || blocked || retry.Done(), err
}

// answeredOrBlocked waits for p to answer, up to retakeWait, unless
// PostgreSQL shows a session of the lab's database waiting on a lock: a
// request that waits for a lock the held statement's transaction holds
// answers only once the check lets the statement go.
func (t *T) answeredOrBlocked(p *Pending) error {
	_, err := t.WaitFor(retakeWait, func() (bool, error) {
		if p.Done() {
			return true, nil
		}
		return t.lockWaited()
	})
	return err
}

// lockWaited reports whether a session of the lab's database waits now
// for a lock another transaction holds (GET /lab/state's lock_waits;
// never on SQLite).
func (t *T) lockWaited() (bool, error) {
	st, err := t.State()
	return err == nil && st.LockWaits > 0, err
}

// lateOriginalFenced is one round of S6.late-original-fenced, with the
// payment draw makes: it reports whether the round saw a late original,
// as WhileHeld's try does.
func (t *T) lateOriginalFenced(s Scenario, latency time.Duration, draw func(*T, Scenario) (Request, func())) (bool, error) {
	lease := t.drawLease(5, 60)
	if err := t.Configure(labclient.Config{Lease: lease}); err != nil {
		return false, err
	}
	req, executed := draw(t, s)
	// The original's lease expires while it waits on the core. Its
	// client's retry takes the key over and waits on the core twice as
	// long, so that it still holds the key when the original wakes up.
	orig, held, err := t.outliveLease(req, latency, lease)
	if !held || err != nil {
		return err != nil, err
	}
	if err := t.Configure(labclient.Config{CoreLatency: 2 * latency}); err != nil {
		return false, err
	}
	retry := t.Launch(req)
	first := orig.Wait()
	tookOver := !retry.Done()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return false, err
	}
	third := t.Do(req)
	second := retry.Wait()
	last := t.Do(req)
	sent := fmt.Sprintf("(lease %v)\n%s  (the original, waiting %v on the core)\n"+
		"while it waits: %v of lab time (its lease expires), and the retry (waiting %v on the core)\n"+
		"the original wakes up and answers  %s\n"+
		"a third attempt, while the retry still waits  →  %s\n"+
		"the retry answers  %s\n"+
		"then one more retry  →  %s",
		lease, req.String(), latency, lease+time.Second, 2*latency, first.Short(), third.Short(), second.Short(), last.Short())
	got := "the original " + first.Short() + "; the third attempt " + third.Short() + "; the retry " + second.Short()
	// One operation, asked for once: a 201 to any attempt, or another
	// 2xx naming its op, means the books expect it to have run once.
	if toldAnyRan(sentOp(req), first, third, second) {
		executed()
	}
	if err := t.Reconcile(sent, got, s.Books); err != nil {
		return true, err
	}
	conclusive, want, differs := lateOriginalVerdict(sentOp(req), first, third, second, tookOver)
	// A contract difference is recorded, and the later rounds still run;
	// a client told something false, or not told its result, ends the
	// check.
	for _, d := range differs {
		t.Differ(sent, got, d)
	}
	if want != "" {
		return true, t.Fail(sent, got, want)
	}
	if !conclusive || !tookOver {
		return conclusive, nil
	}
	// The one result the clients were told: the retry's, or where its
	// work was thrown away, the original's or the third attempt's.
	told, whose := second, "the retry's"
	switch {
	case toldRan(first, sentOp(req)):
		told, whose = first, "the original's"
	case toldRan(third, sentOp(req)) && !toldRan(second, sentOp(req)):
		told, whose = third, "the third attempt's"
	case !second.Is(http.StatusCreated, ""):
		// Told it ran in another 2xx: a contract difference; the last
		// retry is compared with that answer, and the later rounds
		// still run.
		t.Differ(sent, got, "201 Created to the retry that took the key over: it holds the lease, and it executes")
	}
	return true, t.replayOfAnother2xx(sent, told, last, whose, whose+" "+firstGiven(told)+", to the last retry")
}

// lateOriginalVerdict judges S6.late-original-fenced's round from its
// answers: the original's (first), the third attempt's and the retry's
// (second); tookOver says the retry was still waiting when the original
// answered. The books, reconciled before, held: the money moved as the
// clients were told. It reports whether the round observed a late
// original; what was expected if a client was told something false about
// its money or not told its result (want, which ends the check); and the
// contract differences (differs, which the caller records and goes on
// from). The last retry's replay of the one result told is judged after
// it, by the caller, which can show it.
func lateOriginalVerdict(op string, first, third, second Response, tookOver bool) (conclusive bool, want string, differs []string) {
	// Told it ran: a 201, or another 2xx naming op (toldRan). The status
	// is the contract's to judge; the caller records it.
	ran := func(r Response) bool { return toldRan(r, op) }
	same := func(a, b Response) bool { return sameTold(op, a, b) }
	if same(first, second) {
		// The retry reached the key only after the original had completed
		// it, and replays its answer: nothing to fence in this round. On a
		// busy machine the replay can be answered before the check sees the
		// original's answer, so this comes before tookOver.
		return false, "", nil
	}
	if !tookOver && !ran(second) {
		// The retry was answered before the original's answer, and refused
		// (S6.lease-takeover-once judges that): there was no late original
		// to fence.
		return true, "", nil
	}
	if !tookOver {
		// The retry took the key over and finished before the check saw
		// the original's answer (a busy machine: the reconciliation above
		// has judged the money). Its key was completed, not held, when the
		// original failed its completion, so a release that checks no
		// owner had nothing to delete: the round saw no late original
		// beside a retry, and a longer hold tries again.
		return false, "", nil
	}
	const retryExecutes = "201 Created to the retry that took the key over: it holds the lease, and it executes"
	switch {
	case ran(first) && ran(second):
		// Two results for one payment, and the books hold one: one of the
		// two clients was told of money that did not move.
		return true, "the original, whose lease had expired and been taken over, does not complete: 409 " + pInProgress +
			", its transaction rolled back; the retry that holds the lease executes, and every attempt is told one result, not two", nil
	case ran(first):
		// The original's result is the one that moved the money; the
		// retry's work (a core call included) was thrown away.
		return true, "", []string{
			"the original, whose lease had expired and been taken over, does not complete: 409 " + pInProgress +
				", its transaction rolled back; the retry that holds the lease executes (here its work, a core call included, was thrown away, and with a completion that checks nothing the money moves twice)",
			retryExecutes,
		}
	case ran(third) && !same(third, second) && ran(second):
		return true, "409 " + pInProgress + " to the third attempt: the retry holds a live lease, and executes; " +
			"told two results for one payment, whose books hold one, one of the two clients was told of money that did not move", nil
	case ran(third) && !same(third, second):
		// The third attempt's result is the one that moved the money; the
		// retry's claim was deleted under it, its work thrown away.
		differs = append(differs, "409 "+pInProgress+" to the third attempt: the retry holds a live lease. "+
			"The original, refused at its completion, must not give back a key it no longer holds: the retry's", retryExecutes)
	case !ran(second):
		// Nobody was told it ran, and nothing moved: the client whose
		// retry holds the lease is not told its result.
		return true, retryExecutes, nil
	}
	switch ok, why := inProgressAnswer(first); {
	case ok:
	case untypedConflict(first):
		differs = append(differs, "409 "+pInProgress+" with Retry-After to the original, whose lease was taken over; "+untypedWhy)
	case !first.Is(http.StatusConflict, pInProgress):
		return true, "409 " + pInProgress + " to the original, whose lease was taken over: the retry that holds it is executing, and the original's client, told to retry, is answered with its result; told anything else, it stops without it, or pays again under a new key", differs
	default:
		differs = append(differs, "409 "+pInProgress+" with Retry-After to the original, whose lease was taken over, as to every request told to wait: its client retries after it and is answered with the retry's result ("+why+")")
	}
	return true, "", differs
}

// takenOver is what S6.outage-mid-request expects a retry to be told.
const takenOver = "201 Created: once the lease of the failed claim expires, a retry takes it over and executes"

// checkOutageMidRequest catches a claim stuck in progress for good after
// the key store failed at its completion and its release (no lease to
// expire), and a completion outside the business transaction (the money
// stays moved while the key does not say so, and the retry pays again).
func checkOutageMidRequest(t *T) error {
	return t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
		lease, err := t.lease()
		if err != nil {
			return false, err
		}
		req, op, amount := s.Payment(t)
		held, err := t.Hold(req, latency)
		if err != nil {
			return false, err
		}
		if !held.Seen || !held.Early() {
			held.Wait()
			return false, nil
		}
		orig, err := t.storeFailsAfterClaim(held)
		if err != nil {
			return false, err
		}
		sent := fmt.Sprintf("%s\n(claimed; while it waits on the core, the next 2 statements on idempotency_keys fail)  →  %s", req.String(), orig.Short())
		if !orig.Is(http.StatusCreated, "") && !orig.Is(http.StatusServiceUnavailable, pUnavailable) {
			return true, t.Fail(sent, orig.String(), "503 "+pUnavailable+" (or 201 Created if the store was not needed again)")
		}
		// The retries are the client's retry policy: a plain-text 409 is
		// recorded once and comes back as a 409 request-in-progress does.
		final, story, err := t.retryUntilDone(req, lease, sent+"\nthen the store is back", takenOver)
		if err != nil {
			return true, err
		}
		story = sent + "\nthen the store is back" + story
		if toldToComeBack(final) {
			// What the client knows when it stops retrying: told to
			// wait. Nothing executed (or the books would have said so
			// first), and the key table says whether anything ever will.
			s.Books.Expect(op)
			if err := t.Reconcile(story, final.Short(), s.Books); err != nil {
				return true, err
			}
			expected := fmt.Sprintf("201 Created: once the lease of the failed claim expires, a retry takes it over and executes; after each retry told to wait but the last the lab clock moved %v, past the lease, and the fifth retry was still told to wait", lease+time.Second)
			return true, t.toldToWait(req.Key, story, final, expected, waitHarms{
				stuck: "its key is still in progress, nothing runs, and the payment never ran and cannot run",
				done:  "its key is not in progress, yet every retry is told to wait: the payment never ran, and its client never learns its outcome",
			})
		}
		if !final.Is(http.StatusCreated, "") {
			return true, t.Fail(story, final.String(), takenOver)
		}
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
		return true, t.Reconcile(story, "", s.Books)
	})
}

// checkTakeoverOwnKey catches a takeover that finds the key by its string
// alone, or by part of its scope, not by its row (or its whole scope): two
// keys with one string, the first stranded with its lease expired, the
// second stranded with its lease live. The second's retry must not take
// the first's key over, nor call the core; the first's retry must then
// take its own key over and execute. It does that with two customers'
// transfers, then with one customer's deposit and transfer (a takeover
// scoped by the customer and the key string, not the route).
func checkTakeoverOwnKey(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	key := t.Key()
	amountB, opB := t.Amount(1_000, 100_000), t.Op()
	amountA, opA := t.Amount(1_000, 100_000), t.Op()
	early := false
	err := t.takeoverOwnKey(books, &early,
		strandedKey{Transfer(b, key, TransferBody(b.Accounts[0], a.Accounts[0], amountB, opB)), opB, "customer B",
			func() { books.Transfer(opB, b.Accounts[0], a.Accounts[0], amountB) }},
		strandedKey{Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amountA, opA)), opA, "customer A",
			func() { books.Transfer(opA, a.Accounts[0], b.Accounts[0], amountA) }})
	if err := t.earlyFirst(early, err); err != nil {
		return err
	}
	key = t.Key()
	amountD, opD := t.Amount(1_000, 100_000), t.Op()
	amountT, opT := t.Amount(1_000, 100_000), t.Op()
	return t.earlyFirst(early, t.takeoverOwnKey(books, &early,
		strandedKey{Deposit(a, key, DepositBody(a.Accounts[1], amountD, opD)), opD, "customer A's deposit",
			func() { books.Deposit(opD, a.Accounts[1], amountD) }},
		strandedKey{Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amountT, opT)), opT, "customer A's transfer",
			func() { books.Transfer(opT, a.Accounts[0], b.Accounts[0], amountT) }}))
}

// strandedKey is one of S6.takeover-own-key's requests: its op, who sent
// it (for the story), and what its execution does to the books.
type strandedKey struct {
	req Request
	op  string
	who string
	ran func()
}

// takeoverOwnKey is one round of S6.takeover-own-key: expired and live
// send one key string under two scopes, and both are stranded, expired's
// lease then expired and live's live; live's retry must get 409 without a
// call to the core, and expired's retry must take its own key over and
// execute. It sets *early once live's retry executed under its lease.
func (t *T) takeoverOwnKey(books *judging.Books, early *bool, expired, live strandedKey) error {
	lease, err := t.lease()
	if err != nil {
		return err
	}
	books.Expect(expired.op)
	books.Expect(live.op)
	first, err := t.strand(expired.req)
	if err != nil {
		return err
	}
	story := fmt.Sprintf("%s  (%s)\n(armed crash-in-transfer: the original died inside its business write  →  %s)", expired.req.String(), expired.who, first.Short())
	now, err := t.LabNow()
	if err != nil {
		return err
	}
	if err := t.SetClock(now.Add(lease + time.Second)); err != nil {
		return err
	}
	story += fmt.Sprintf("\nthen %s of lab time: %s's lease (%s) has expired", lease+time.Second, expired.who, lease)
	first, err = t.strand(live.req)
	if err != nil {
		return err
	}
	story += fmt.Sprintf("\nthen %s  (%s, the same key string)\n(armed crash-in-transfer  →  %s): %s's lease is live", live.req.String(), live.who, first.Short(), live.who)
	before, err := t.State()
	if err != nil {
		return err
	}
	r := t.Do(live.req)
	story += fmt.Sprintf("\nthen %s's retry  →  %s", live.who, r.Short())
	executed := toldRan(r, live.op)
	if executed {
		// Told that its payment ran (a 201, or a 2xx naming it): the
		// books expect it once. A retry
		// that executes under its own live lease (a server that forgot
		// the key when it crashed) is a contract difference, as in
		// S6.live-lease-409, and the expired key's retry is still sent.
		live.ran()
	}
	if err := t.Reconcile(story, "", books); err != nil {
		return err
	}
	after, err := t.State()
	if err != nil {
		return err
	}
	if executed {
		*early = true
		t.Differ(story, r.String(), fmt.Sprintf("409 %s, and no execution: %s's lease is live, and its retry is told to wait until it expires (a server that forgets its keys when it crashes executes it; the money is right, once, as its client was told)", pInProgress, live.who))
	} else if after.CoreCalls[live.op] > before.CoreCalls[live.op] {
		return t.Fail(story, fmt.Sprintf("%s, after calling the core for op %s", r.Short(), live.op),
			fmt.Sprintf("409 %s before any call to the core: %s's lease is live, and %s's expired key is not its to take over; a takeover finds the key by its whole scope (customer, method, route and key string) or by its row, never by its string or part of its scope", pInProgress, live.who, expired.who))
	}
	r = t.Do(expired.req)
	story += fmt.Sprintf("\nthen %s's retry", expired.who)
	if toldRan(r, expired.op) {
		expired.ran()
	}
	if err := t.Reconcile(story, r.Short(), books); err != nil {
		return err
	}
	if !r.Is(http.StatusCreated, "") {
		return t.Fail(story, r.String(),
			fmt.Sprintf("201 Created: %s's lease expired, and its retry takes its key over and executes; %s's retry, which came under another scope with the same key string, must have left that key as it was", expired.who, live.who))
	}
	return nil
}

// checkTwoServersTakeover catches a takeover decided by a read and a later
// write, kept apart from the other retries by a mutex in the server's
// memory: no two retries that reach one process decide at once, and
// S6.lease-takeover-once, which runs one process, sees one call to the
// core; a second process knows nothing of that mutex. The server runs as
// two processes on one database; a payment's original dies inside its
// business write, and once its lease has expired, its retries arrive at
// once, every other one through the second process, with the first
// update of the key table held up in each (slow-key-update), so that a
// retry of each process reads the lease before either writes it, and the
// first delete of the key table by a request that read it before
// (slow-key-delete-after-read), for a takeover that deletes the expired
// key and claims it afresh. The core calls are counted in both processes.
func checkTwoServersTakeover(t *T) error {
	const n = 16
	rt, s, err := t.twoServers(1_000_000)
	if err != nil {
		return err
	}
	books := s.Books
	lease := rt.drawLease(5, 20)
	if err := rt.Configure(labclient.Config{Lease: lease}); err != nil {
		return err
	}
	var p strandedPayment
	p.req, p.op, p.amount = s.Payment(rt)
	books.Expect(p.op)
	stranded, err := rt.strand(p.req)
	if err != nil {
		return err
	}
	// The process that died has forgotten the config.
	if err := rt.Configure(labclient.Config{Lease: lease}); err != nil {
		return err
	}
	if p.claimedBy, err = rt.LabNow(); err != nil {
		return err
	}
	if err := rt.SetClock(p.claimedBy.Add(lease + time.Second)); err != nil {
		return err
	}
	sent := fmt.Sprintf("(two server processes on one database; POST /lab/config: lease %v)\n%s\n(armed crash-in-transfer: the original died inside its business write  →  %s)\n"+
		"then the lab clock set to 1s after its lease expired, and %d retries at once, every other one through the second process, with the slow-key-update fault holding the first update of the key table in each for %v, and slow-key-delete-after-read the first delete of it by a request that read it before, for %v",
		lease, p.req.String(), stranded.Short(), n, fault.KeyUpdateDelay, fault.KeyDeleteDelay)
	before, err := rt.coreCallsEverywhere(p.op)
	if err != nil {
		return err
	}
	for _, point := range []string{labctl.SlowKeyUpdate, labctl.SlowKeyDeleteAfterRead} {
		if err := rt.ArmEverywhere(point, 1); err != nil {
			return err
		}
	}
	rs := rt.Simultaneously(n, func(i int) Request { r := p.req; r.Replica = i % 2; return r })
	for _, point := range []string{labctl.SlowKeyUpdate, labctl.SlowKeyDeleteAfterRead} {
		if err := rt.ArmEverywhere(point, 0); err != nil {
			return err
		}
	}
	got := Summarize(rs)
	ran := func() { books.Transfer(p.op, s.A.Accounts[0], s.B.Accounts[0], p.amount) }
	// k counts the transfers the 201s name, a contract statement (one
	// 201, and its replays): the books go by what the retries were told.
	k := executedOps(rs...)
	if k > 0 || toldAnyRan(p.op, rs...) {
		ran()
	}
	if err := rt.Reconcile(sent, got, books); err != nil {
		return err
	}
	for _, r := range rs {
		if r.ServerFailed() {
			return rt.Fail(sent, got, "no 5xx and no dropped connection: one retry takes the key over and executes, the others get 409 request-in-progress")
		}
	}
	switch {
	case k == 0:
		return rt.noTakeover(sent, got, p, rs, ran, books, "one retry takes over the expired lease and executes: 201 Created")
	case k > 1:
		return rt.Fail(sent, got, "every 201 names one transfer: one execution, and its stored answer to the others")
	}
	after, err := rt.coreCallsEverywhere(p.op)
	if err != nil {
		return err
	}
	if calls := after - before; calls > 1 {
		return rt.Fail(sent, fmt.Sprintf("%s; the core was called for this payment by %d of the retries", got, calls),
			"one retry takes the expired lease over and calls the core, once: the takeover is decided by one conditional write in the database, which every process sees, not by a mutex that only one process's retries wait on")
	}
	return nil
}

// coreCallsEverywhere is how many requests called the core for op, summed
// over every process of the target: each process counts its own.
func (t *T) coreCallsEverywhere(op string) (int64, error) {
	st, err := t.State()
	if err != nil {
		return 0, err
	}
	calls := st.CoreCalls[op]
	for _, lab := range t.replicaLabs() {
		st, err := lab.State(t.ctx)
		if err != nil {
			return 0, err
		}
		calls += st.CoreCalls[op]
	}
	return calls, nil
}
