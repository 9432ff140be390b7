package grader

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const lesson5 = "docs/lessons/05-scope-retention.md"

func init() {
	register(
		Check{
			ID: "S5.customers-scoped", Stage: 5, Lesson: lesson5 + "#whose-key",
			Claim: "two customers who send the same key string get their own transfers and their own replays, never each other's",
			Why:   "keys are chosen by clients, and two clients can choose alike; a key shared across customers refuses one customer's payment, or replays another customer's transfer to them",
			Run:   checkCustomersScoped,
		},
		Check{
			ID: "S5.endpoints-scoped", Stage: 5, Lesson: lesson5 + "#one-key-per-endpoint",
			Claim: "the same key on POST /transfers and POST /deposits names two independent operations",
			Why:   "a client that numbers its requests per endpoint would have its deposit refused as a reused key, or answered with a transfer",
			Run:   checkEndpointsScoped,
		},
		Check{
			ID: "S5.retention-boundary", Stage: 5, Lesson: lesson5 + "#how-long-to-remember",
			Claim: "a retry just inside the retention period (on the lab clock) is replayed; just after it, the same key is a new request",
			Why:   "forget a key too early and a late retry pays twice; never forget it and the table grows without end while old keys refuse new operations",
			Run:   checkRetentionBoundary,
		},
		Check{
			ID: "S5.purge-bounded", Stage: 5, Lesson: lesson5 + "#purging",
			Claim: "a purge removes every expired completed key and keeps every live one, which still replays",
			Why:   "a key table that only grows slows every claim and fills the disk; a purge that takes live keys turns the next retry into a second payment",
			Run:   checkPurgeBounded,
		},
		Check{
			ID: "S5.purge-keeps-in-progress", Stage: 5, Lesson: lesson5 + "#never-purge-in-progress",
			Claim: "a purge never removes an in-progress key, however old: a retry of the running original still gets 409",
			Why:   "the original is still moving the money; without its key, the next retry claims again and executes a second time",
			Run:   checkPurgeKeepsInProgress,
		},
	)
}

// answerID reads the id of a transfer or deposit answer.
func answerID(r Response) string {
	var v struct {
		ID string `json:"id"`
	}
	json.Unmarshal(r.Body, &v)
	return v.ID
}

// checkCustomersScoped catches a scope without the customer: the second
// customer's request is refused (422 key reused, 409 in progress) or
// answered with the first customer's transfer.
func checkCustomersScoped(t *T) error {
	const opening = 2_000_000
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	key := t.Key()
	books := t.NewBooks(opening, a.Accounts[0], b.Accounts[0])
	opA, opB := t.Op(), t.Op()
	x, y := t.Amount(1_000, 500_000), t.Amount(1_000, 500_000)
	reqs := []Request{
		Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], x, opA)),
		Transfer(b, key, TransferBody(b.Accounts[0], a.Accounts[0], y, opB)),
	}
	who := []string{"customer " + a.ID, "customer " + b.ID}
	rs := t.Simultaneously(2, func(i int) Request { return reqs[i] })
	sent := fmt.Sprintf("at once, the same key %s from two customers:\n%s: %s\n%s: %s", key, who[0], reqs[0].String(), who[1], reqs[1].String())
	for i, r := range rs {
		if !r.Is(http.StatusCreated, "") || r.Replayed() {
			return t.Fail(sent, who[i]+" got "+r.String(), "201 Created for each: a key belongs to the customer who sent it")
		}
	}
	if answerID(rs[0]) == answerID(rs[1]) {
		return t.Fail(sent, "both got transfer "+answerID(rs[0]), "two transfers, one for each customer")
	}
	books.Transfer(opA, a.Accounts[0], b.Accounts[0], x)
	books.Transfer(opB, b.Accounts[0], a.Accounts[0], y)
	for i, req := range reqs {
		r := t.Do(req)
		retry := sent + "\nthen " + who[i] + " retries: " + req.String()
		if d := replayMismatch(rs[i], r); d != "" {
			got := r.String() + "\n" + d
			if other := answerID(rs[1-i]); strings.Contains(string(r.Body), other) {
				got = r.String() + "\nthat is the other customer's transfer " + other
			}
			return t.Fail(retry, got, who[i]+"'s own stored 201, with Idempotent-Replayed: true")
		}
	}
	return t.Reconcile(sent+"\nthen each retried once", "", books)
}

// checkEndpointsScoped catches a scope without the method and route: the
// deposit is refused as a reused key, or answered with the transfer.
func checkEndpointsScoped(t *T) error {
	const opening = 2_000_000
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	key := t.Key()
	books := t.NewBooks(opening, a.Accounts[0], a.Accounts[1], b.Accounts[0])
	opT, opD := t.Op(), t.Op()
	x, y := t.Amount(1_000, 500_000), t.Amount(1_000, 500_000)
	reqs := []Request{
		Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], x, opT)),
		Deposit(a, key, DepositBody(a.Accounts[1], y, opD)),
	}
	if t.Rand().IntN(2) == 0 {
		reqs[0], reqs[1] = reqs[1], reqs[0]
	}
	var firsts []Response
	var story []string
	for _, req := range reqs {
		r := t.Do(req)
		story = append(story, req.String()+"  →  "+r.Short())
		if !r.Is(http.StatusCreated, "") || r.Replayed() {
			return t.Fail(strings.Join(story, "\n"), r.String(), "201 Created: the same key on another endpoint is another operation")
		}
		firsts = append(firsts, r)
	}
	books.Transfer(opT, a.Accounts[0], b.Accounts[0], x)
	books.Deposit(opD, a.Accounts[1], y)
	for i, req := range reqs {
		r := t.Do(req)
		sent := strings.Join(story, "\n") + "\nthen the retry of " + req.String()
		if d := replayMismatch(firsts[i], r); d != "" {
			return t.Fail(sent, r.String()+"\n"+d, "the stored 201 of that endpoint's own request, with Idempotent-Replayed: true")
		}
	}
	return t.Reconcile(strings.Join(story, "\n")+"\nthen each retried once", "", books)
}

// checkRetentionBoundary catches keys that never expire (stage 4), expiry
// on the real clock instead of the lab clock, a retention hard-coded
// instead of read from the config, and expiry too early (by the retry
// horizon, say).
func checkRetentionBoundary(t *T) error {
	const opening = 2_000_000
	const retention = 3 * time.Hour
	const margin = 2 * time.Second
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	if err := t.Configure(map[string]string{"retention": retention.String()}); err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	books := t.NewBooks(opening, a.Accounts[0], b.Accounts[0])
	amount, op := t.Amount(1_000, 500_000), t.Op()
	req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
	orig := t.Do(req)
	if !orig.Is(http.StatusCreated, "") {
		return t.Fail(req.String(), orig.String(), "201 Created")
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	story := fmt.Sprintf("(retention set to %v)\n%s  →  201", retention, req.String())

	if err := t.Advance((retention - margin).String()); err != nil {
		return err
	}
	story += fmt.Sprintf("\nthen %v of lab time (%v before the key expires), and the retry", retention-margin, margin)
	inside := t.Do(req)
	if d := replayMismatch(orig, inside); d != "" {
		return t.Fail(story, inside.String()+"\n"+d, "the stored 201 with Idempotent-Replayed: true: the key is still within its retention period")
	}
	if err := t.Reconcile(story, inside.Short(), books); err != nil {
		return err
	}

	if err := t.Advance((2 * margin).String()); err != nil {
		return err
	}
	story += fmt.Sprintf("  →  %s\nthen %v more (%v after the key expired), and the retry", inside.Short(), 2*margin, margin)
	after := t.Do(req)
	if !after.Is(http.StatusCreated, "") || after.Replayed() || answerID(after) == answerID(orig) {
		return t.Fail(story, after.String(), "201 Created, a new transfer without Idempotent-Replayed: after its retention period the key is forgotten, and the same key is a new request")
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	story += "  →  201 (a new transfer)\nthen the retry of that one"
	again := t.Do(req)
	if d := replayMismatch(after, again); d != "" {
		return t.Fail(story, again.String()+"\n"+d, "the new transfer's stored 201, with Idempotent-Replayed: true")
	}
	return t.Reconcile(story, again.Short(), books)
}

// checkPurgeBounded catches a purge that does nothing (or is missing), one
// that takes live keys with the expired, and expiry on the wrong clock.
func checkPurgeBounded(t *T) error {
	const opening = 10_000_000
	const retention = 2 * time.Hour
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	if err := t.Configure(map[string]string{"retention": retention.String()}); err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	batch := func(n int) ([]Request, error) {
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = Transfer(a, t.Key(), TransferBody(a.Accounts[i%2], b.Accounts[0], t.Amount(1, 10_000), t.Op()))
		}
		for i, r := range t.Simultaneously(n, func(i int) Request { return reqs[i] }) {
			if !r.Is(http.StatusCreated, "") {
				return nil, t.Fail(reqs[i].String(), r.String(), "201 Created")
			}
		}
		return reqs, nil
	}
	old, err := batch(12)
	if err != nil {
		return err
	}
	if err := t.Advance("1h"); err != nil {
		return err
	}
	live, err := batch(8)
	if err != nil {
		return err
	}
	if err := t.Advance("61m"); err != nil {
		return err
	}
	if _, err := t.Purge(); err != nil {
		return fmt.Errorf("POST /lab/purge: %w", err)
	}
	sent := fmt.Sprintf("(retention %v) 12 transfers, then 1h of lab time, 8 more, then 61m more (the first 12 expired a minute ago, the 8 have 59m left), then POST /lab/purge", retention)
	st, err := t.State()
	if err != nil {
		return err
	}
	var kept []string
	for _, req := range old {
		if rows := KeyRows(st, req.Key); len(rows) > 0 {
			kept = append(kept, req.Key)
		}
	}
	if len(kept) > 0 {
		return t.Fail(sent, fmt.Sprintf("%d of the 12 expired keys still in idempotency_keys (%s…); %d rows in all", len(kept), kept[0], len(st.Keys)),
			"the 12 expired keys purged, 8 rows left")
	}
	var lost []string
	for _, req := range live {
		if rows := KeyRows(st, req.Key); len(rows) == 0 {
			lost = append(lost, req.Key)
		}
	}
	if len(lost) > 0 {
		return t.Fail(sent, fmt.Sprintf("%d of the 8 live keys gone (%s…)", len(lost), lost[0]), "the 8 keys still within retention kept")
	}
	req := live[t.Rand().IntN(len(live))]
	r := t.Do(req)
	if !r.Is(http.StatusCreated, "") || !r.Replayed() {
		return t.Fail(sent+"\nthen the retry of one of the 8: "+req.String(), r.String(), "the stored 201, with Idempotent-Replayed: true")
	}
	return nil
}

// checkPurgeKeepsInProgress catches a purge that deletes old keys whatever
// their state, and a claim that treats an expired in-progress key as free:
// either way the retry of a running original executes a second time.
func checkPurgeKeepsInProgress(t *T) error {
	return t.WhileHeld(func(latency time.Duration) (bool, error) {
		const opening = 1_000_000
		cs, err := t.Reset(2, opening)
		if err != nil {
			return false, err
		}
		// A lease longer than the jump of the clock: this check is about
		// the purge, not about taking over an expired lease (stage 6).
		if err := t.Configure(map[string]string{"lease": "72h"}); err != nil {
			return false, err
		}
		a, b := cs[0], cs[1]
		books := t.NewBooks(opening, a.Accounts[0], b.Accounts[0])
		amount, op := t.Amount(1_000, 100_000), t.Op()
		req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
		held, err := t.Hold(req, latency)
		if err != nil {
			return false, err
		}
		if !held.Seen {
			held.Wait()
			return true, t.Fail(req.String(), "the key never showed in_progress while the original waited on the core",
				"the key in progress from the claim until the business write completes it (stage 3)")
		}
		if err := t.Advance("25h"); err != nil {
			return false, err
		}
		if _, err := t.Purge(); err != nil {
			return false, fmt.Errorf("POST /lab/purge: %w", err)
		}
		st, err := t.State()
		if err != nil {
			return false, err
		}
		running := !held.Done()
		sent := fmt.Sprintf("%s\n(the original waits %v on the core; while it waits: 25h of lab time, past the retention period, and POST /lab/purge)", req.String(), latency)
		if len(KeyRows(st, req.Key)) == 0 {
			held.Wait()
			if !running {
				return false, nil
			}
			return true, t.Fail(sent, "the key's row is gone from idempotency_keys while its original still runs",
				"the in-progress row kept: a purge removes only completed keys")
		}
		early := held.Early()
		retry := t.Do(req)
		orig := held.Wait()
		sent += "\nthen the retry, the same request"
		if !retry.Is(http.StatusConflict, pInProgress) {
			if !early {
				return false, nil
			}
			return true, t.Fail(sent, retry.String()+"\n(the original then answered "+orig.Short()+")",
				"409 "+pInProgress+": the original still runs")
		}
		if !orig.Is(http.StatusCreated, "") {
			return true, t.Fail(sent, "the original answered "+orig.String(), "201 Created once its core call returns")
		}
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		return true, t.Reconcile(sent, retry.Short()+", and the original "+orig.Short(), books)
	})
}
