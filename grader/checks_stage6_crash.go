package grader

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/history"
	"idemlab/grader/judging"
	"idemlab/grader/replay"
	"idemlab/grader/targets"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
)

// checkCrashRecovery catches a key stuck in progress after a crash (no
// lease, or a takeover on one route only: a deposit crashes inside its
// business write too), a key completed outside the business transaction
// (after a crash between the two commits, the retry executes again, or
// hears "done" for money that never moved), and a replay that is not
// stored with the money. It needs a server it can kill: a child process.
func checkCrashRecovery(t *T) error {
	c, err := t.OnChild()
	if err != nil {
		return err
	}
	return c.crashRecovery()
}

// toldSuccess is a 201 some client heard, to check against the books.
type toldSuccess struct {
	req Request
	res Response
}

func (t *T) crashRecovery() error {
	const opening = 10_000_000
	s, err := t.Scenario(3, opening)
	if err != nil {
		return err
	}
	cs, a, books := s.Customers, s.A, s.Books
	var told []toldSuccess
	var story []string
	transfer := func() (Request, string, func()) {
		to := cs[1+t.Rand().IntN(len(cs)-1)].Accounts[t.Rand().IntN(2)]
		amount, op := t.Amount(1_000, 300_000), t.Op()
		books.Expect(op)
		req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], to, amount, op))
		return req, op, func() { books.Transfer(op, a.Accounts[0], to, amount) }
	}
	deposit := func() (Request, string, func()) {
		amount, op := t.Amount(1_000, 300_000), t.Op()
		books.Expect(op)
		req := Deposit(a, t.Key(), DepositBody(a.Accounts[1], amount, op))
		return req, op, func() { books.Deposit(op, a.Accounts[1], amount) }
	}

	// Each crash point, one request at a time; then a deposit that dies
	// inside its business write, whose key a retry must take over as it
	// does a transfer's.
	for _, c := range []struct {
		point   string
		payment func() (Request, string, func())
	}{
		{labctl.CrashInTransfer, transfer},
		{labctl.CrashAfterCommit, transfer},
		{labctl.CrashBeforeResponse, transfer},
		{labctl.CrashInTransfer, deposit},
	} {
		req, op, executed := c.payment()
		if err := t.Arm(c.point, 1); err != nil {
			return err
		}
		r := t.Do(req)
		step := fmt.Sprintf("%s\n(armed: %s)  →  %s", req.String(), c.point, r.Short())
		if toldRan(r, op) {
			told = append(told, toldSuccess{req, r})
		}
		exited, err := t.Crashed(10 * time.Second)
		if err != nil {
			return err
		}
		if !exited {
			return fmt.Errorf("the %s fault was armed and the request sent, but the server did not exit", c.point)
		}
		if err := t.Restart(); err != nil {
			return err
		}
		lease, err := t.lease()
		if err != nil {
			return err
		}
		const converged = "201 Created in the end: the retry of a crashed request executes once, or replays the answer the crash lost"
		final, retries, err := t.retryUntilDone(req, lease, strings.Join(append(story, step+"\nthe server restarts on the same database file"), "\n\n"), converged)
		if err != nil {
			return err
		}
		step += "\nthe server restarts on the same database file" + retries
		story = append(story, step)
		if !toldRan(final, op) {
			return t.judgeUnconverged(strings.Join(story, "\n\n"), []unconverged{{req, final, op, executed}}, books, converged)
		}
		if !final.Is(http.StatusCreated, "") {
			// Told its payment ran in another 2xx: a contract
			// difference; the books and the later crash points judge.
			t.Differ(strings.Join(story, "\n\n"), final.String(), converged)
		}
		told = append(told, toldSuccess{req, final})
		executed()
		if err := t.Reconcile(strings.Join(story, "\n\n"), "", books); err != nil {
			return err
		}
	}

	// kill -9 under load: several transfers in flight, some answered,
	// some waiting on the core, when the process dies.
	const inFlight = 6
	if err := t.Configure(labclient.Config{CoreLatency: 200 * time.Millisecond}); err != nil {
		return err
	}
	answered := t.Rand().IntN(3)
	var reqs []Request
	var ops []string
	var pending []*Pending
	var done []func()
	for range inFlight {
		req, op, executed := transfer()
		reqs, ops, done = append(reqs, req), append(ops, op), append(done, executed)
		p := t.Launch(req)
		pending = append(pending, p)
		if _, err := t.WaitFor(5*time.Second, func() (bool, error) {
			st, err := t.State()
			return p.Done() || len(judging.KeyRows(st, req.Key)) > 0, err
		}); err != nil {
			return err
		}
	}
	if _, err := t.WaitFor(5*time.Second, func() (bool, error) {
		n := 0
		for _, p := range pending {
			if p.Done() {
				n++
			}
		}
		return n >= answered, nil
	}); err != nil {
		return err
	}
	t.kill()
	step := fmt.Sprintf("%d transfers in flight (core latency 200ms), kill -9 once %d had answered:", inFlight, answered)
	for i, p := range pending {
		r := p.Wait()
		step += "\n  " + reqs[i].String() + "  →  " + r.Short()
		if toldRan(r, ops[i]) {
			told = append(told, toldSuccess{reqs[i], r})
		}
	}
	if err := t.Restart(); err != nil {
		return err
	}
	step += "\nthe server restarts on the same database file, and each client retries"
	lease, err := t.lease()
	if err != nil {
		return err
	}
	var stuck []unconverged
	for i, req := range reqs {
		final, retries, err := t.retryUntilDone(req, lease, strings.Join(append(story, step+"\n  "+req.Key), "\n\n"), "201 Created in the end for every transfer")
		if err != nil {
			return err
		}
		step += "\n  " + req.Key + ": " + strings.ReplaceAll(strings.TrimPrefix(retries, "\n"), "\n", "; ")
		if !toldRan(final, ops[i]) {
			stuck = append(stuck, unconverged{req, final, ops[i], done[i]})
			continue
		}
		if !final.Is(http.StatusCreated, "") {
			t.Differ(step, final.String(), "201 Created in the end for every transfer")
		}
		told = append(told, toldSuccess{req, final})
		done[i]()
	}
	story = append(story, step)
	sent := strings.Join(story, "\n\n")
	if len(stuck) > 0 {
		return t.judgeUnconverged(sent, stuck, books, "201 Created in the end for every transfer")
	}
	if err := t.Reconcile(sent, "", books); err != nil {
		return err
	}
	// Every success a client heard names a transfer or deposit that exists.
	for _, s := range told {
		id := answerID(s.res)
		r := t.Do(Request{Method: "GET", Path: s.req.Path + "/" + id, Token: a.Token})
		if !r.Is(http.StatusOK, "") {
			kind := strings.TrimSuffix(strings.TrimPrefix(s.req.Path, "/"), "s")
			return t.Fail(sent+"\nthen GET "+s.req.Path+"/"+id, r.String(),
				"200: the client of "+s.req.Key+" was told 201 with "+kind+" "+id+", so that "+kind+" must exist")
		}
	}
	return nil
}

// unconverged is a crashed request whose retries never got 201: final
// is the last answer, and executed records its op in the books.
type unconverged struct {
	req      Request
	final    Response
	op       string
	executed func()
}

// judgeUnconverged judges the crashed requests us whose retries never got
// 201, money first. A key still told to come back (toldToComeBack) gets
// one more retry once the client's retry horizon is over (and three
// leases at least): its client has given up by then. The books, read
// next, record each one's op as executed if it ran, and must reconcile.
// Then a client still told to wait is judged by its key's row
// (toldToWait), whether or not its operation ran: a row still in progress
// is a key stuck for good, which its client can neither finish nor run,
// and comes first; a row completed, or none, leaves a client with no
// usable answer. Any other final answer fails against expected.
func (t *T) judgeUnconverged(sent string, us []unconverged, books *judging.Books, expected string) error {
	inProgress := func(u unconverged) bool { return toldToComeBack(u.final) }
	if slices.ContainsFunc(us, inProgress) {
		st, err := t.State()
		if err != nil {
			return err
		}
		horizon, err := time.ParseDuration(st.Config.RetryHorizon)
		if err != nil {
			return err
		}
		lease, err := time.ParseDuration(st.Config.Lease)
		if err != nil {
			return err
		}
		wait := max(horizon, 3*lease) + time.Second
		if err := t.Advance(wait); err != nil {
			return err
		}
		sent += fmt.Sprintf("\nthen %v of lab time (past the client's retry horizon, %v), and one more retry of each key still in progress:", wait, horizon)
		for i, u := range us {
			if inProgress(u) {
				us[i].final = t.Do(u.req)
				sent += "\n  " + u.req.Key + "  →  " + us[i].final.Short()
			}
		}
	}
	st, err := t.State()
	if err != nil {
		return err
	}
	for _, u := range us {
		if st.Executions[u.op] > 0 {
			u.executed()
		}
	}
	if err := t.Reconcile(sent, us[0].final.Short(), books); err != nil {
		return err
	}
	waiting := slices.IndexFunc(us, func(u unconverged) bool { return inProgress(u) && judging.KeyInProgress(st, u.req.Key) })
	if waiting < 0 {
		waiting = slices.IndexFunc(us, inProgress)
	}
	if waiting >= 0 {
		u := us[waiting]
		got := u.req.Key + ": " + u.final.String() + "\nthen /lab/state: op " + u.op + " " + history.Executed(st.Executions[u.op]) + ", and "
		return t.toldToWaitIn(st, u.req.Key, sent, got, expected, waitHarms{
			stuck: "the lease in force has run out many times over and nothing runs any more, yet the key says something does, past the client's retry horizon: its client can neither get its result nor execute it",
			done:  "its key is not in progress, yet every retry is still told to wait, past the client's retry horizon: the client never learns what became of its operation",
		})
	}
	// A late 201 still fails: the retries before the horizon got none.
	u := us[max(slices.IndexFunc(us, func(u unconverged) bool { return !u.final.Is(http.StatusCreated, "") }), 0)]
	return t.Fail(sent, u.req.Key+": "+u.final.String(), expected)
}

// checkDayReplayThroughFaults catches whatever a single scenario misses:
// a generated day mixes lost answers, resets after processing, withheld
// responses, truncated bodies, shed requests, double clicks, respelled
// retries, edited resubmissions and late retries, and the server crashes
// at every crash point and is killed under load while the day runs; every
// operation and balance is reconciled at the end.
func checkDayReplayThroughFaults(t *T) error {
	const ops = 150
	params := dayplan.DefaultParams(t.Rand().Uint64()%1_000_000, ops)
	params.FaultRate = 0.5
	plan, err := dayplan.Generate(params.Reset.Seed, params)
	if err != nil {
		return err
	}
	c, err := t.OnChild()
	if err != nil {
		return err
	}
	// Every claim of the day, the very first included, must carry the
	// short lease: a key stranded by a crash under the default 30s lease
	// would outlast the clients' horizon. The day's reset keeps the config.
	if err := c.Configure(labclient.Config{Lease: replay.DayLease}); err != nil {
		return err
	}
	crashes := []string{labctl.CrashInTransfer, labctl.CrashAfterCommit, labctl.CrashBeforeResponse, killUnderLoad}
	t.Rand().Shuffle(len(crashes), func(i, j int) { crashes[i], crashes[j] = crashes[j], crashes[i] })

	stop := make(chan struct{})
	crashed := make(chan crashLog, 1)
	gate := newPausable(c.target.Client.Transport)
	go func() { crashed <- c.crashDuring(stop, gate, crashes) }()
	// Clients give up after 10 minutes of the plan's clock instead of an
	// hour: the driver sleeps about a thousandth of each backoff, so a key
	// stuck in progress fails the day in half a second of real time, while
	// a lease of replay.DayLease frees a stranded key within a few minutes of the
	// plan's clock.
	policy := replay.DefaultRetryPolicy()
	policy.Horizon = 10 * time.Minute
	res, err := replay.Run(t.ctx, plan, replay.Options{URL: c.target.URL, Admin: c.target.Admin, Base: gate, Policy: policy})
	close(stop)
	log := <-crashed
	if log.err != nil {
		return log.err
	}
	if err != nil {
		return err
	}
	rc := replay.ReconcileDay(res)
	// A late retry may run an operation again once its key has expired,
	// as ReconcileDay allows: the books say so, or the verdict on the
	// target's money (the day's own server, under lab grade) would call
	// it a double, whether the day passes or fails for another reason.
	// The day's own doubles are rc's to judge.
	allowed := t.NewBooks(0)
	for op, n := range res.Final.Executions {
		allowed.Executions[op] = n
	}
	if rc.Valid {
		return nil
	}
	return t.dayFailure(rc, fmt.Sprintf("a replay of the day that this command writes to day.jsonl: %s\n(half the operations meet failure points of the network; the server crashed %d times: %s)",
		dayCommand(params), len(log.fired), strings.Join(log.fired, ", ")), DayResults(t.Subject()))
}

// dayFailure is the failure of a day rc found invalid, sent as sent: its
// report, with all saying where the rest of its findings are. Money
// first: a day whose counts show a money finding is judged that harm, the
// worst of them (rc.Harm); only a day of contract differences alone (an
// answer the contract does not allow, a replay in other bytes) is one.
// Its Count is how many operations or accounts that harm's findings name.
func (t *T) dayFailure(rc replay.DayReconciliation, sent, all string) error {
	harm, n := rc.Harmed()
	err := t.Harmful(harm, sent, replay.DayReport(rc, all),
		"0 executed more than once, 0 lost, 0 mismatched replays, 0 unexpected answers, every client of an executed operation knows its original answer, every balance = opening + executions")
	err.(*judging.Failure).Count = n
	return err
}

// DayResults says how to see every finding of the day dayCommand writes:
// the command, run as printed from the checkout's root, that replays it
// against subject (without the crashes) and writes them all.
func DayResults(subject targets.Subject) string {
	against := fmt.Sprintf("--stage %d", subject.Stage)
	switch {
	case strings.HasPrefix(subject.Name, "solutions/"):
		against += " --solution"
	case !strings.HasPrefix(subject.Name, "stages/"):
		// Not a stage of this checkout: a server the person starts.
		against = "--url URL --admin-token TOKEN"
	}
	return fmt.Sprintf("`%s replay --log day.jsonl %s --results DIR` replays that day (without the crashes) and writes all of them to DIR/results.json",
		Program(), against)
}

// dayCommand is the command, run as printed from the checkout's root,
// that writes the day p makes to day.jsonl; the plan's header keeps the
// bare lab gen form as the description of how it was made.
func dayCommand(p dayplan.Params) string {
	return p.CommandFor(Program()) + " -o day.jsonl"
}
