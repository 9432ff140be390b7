package grader

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/bank"
	"idemlab/kit/fault"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
	"idemlab/kit/request"
)

// reference draws an invoice number.
func (t *T) reference() string {
	return fmt.Sprintf("INV-%d-%06d", 2020+t.rng.IntN(10), t.rng.IntN(1_000_000))
}

// ReferencedBody writes a transfer body with an op and a reference, in a
// fixed member order, its memo "invoice".
func ReferencedBody(from, to string, amount int64, op, reference string) string {
	return referencedBody(from, to, amount, "invoice", op, reference)
}

// referencedBody is ReferencedBody with memo for a memo.
func referencedBody(from, to string, amount int64, memo, op, reference string) string {
	return fmt.Sprintf(`{"from":%q,"to":%q,"amount":%d,"memo":%q,"metadata":{"op":%q},"reference":%q}`, from, to, amount, memo, op, reference)
}

// invoice is a transfer that pays one invoice: who pays, from and to
// which account, how much, with which memo, under which op and reference.
type invoice struct {
	payer             bank.Customer
	from, to          string
	amount            int64
	memo              string
	op, reference     string
	firstKey, firstID string
}

// invoiceOf draws an invoice that s.A pays s.B, from and to their first
// accounts, under a new key.
func (t *T) invoiceOf(s Scenario) invoice {
	return invoice{payer: s.A, from: s.A.Accounts[0], to: s.B.Accounts[0], amount: t.Amount(1_000, 100_000),
		memo: "invoice", op: t.Op(), reference: t.reference(), firstKey: t.Key()}
}

// body is the invoice's transfer body, for amount.
func (inv invoice) body(amount int64) string {
	return referencedBody(inv.from, inv.to, amount, inv.memo, inv.op, inv.reference)
}

// location is the Location of the transfer that first paid the invoice.
func (inv invoice) location() string { return "/transfers/" + inv.firstID }

// paidInvoice resets the bank to that many customers (at least two) and
// pays an invoice of A's to B once, with a fresh key, and books it. It
// returns the scenario, the invoice and the story so far, or a failure if
// the payment does not execute.
func (t *T) paidInvoice(customers int) (Scenario, invoice, string, error) {
	s, err := t.Scenario(customers, 1_000_000)
	if err != nil {
		return Scenario{}, invoice{}, "", err
	}
	inv, story, err := t.payInvoice("", "a clerk pays invoice", s, s.A, s.B.Accounts[0], t.reference(),
		"201 Created: the first transfer with this reference executes")
	if err != nil {
		return Scenario{}, invoice{}, "", err
	}
	return s, inv, story, nil
}

// payInvoice has payer pay an invoice numbered reference, from its first
// account to the account to, once, with a fresh key, and books it. It
// returns the invoice and the story with the payment told as what, or,
// if the payment does not execute, a failure that expected says should
// have happened.
func (t *T) payInvoice(story, what string, s Scenario, payer bank.Customer, to, reference, expected string) (invoice, string, error) {
	inv := invoice{payer: payer, from: payer.Accounts[0], to: to, amount: t.Amount(1_000, 100_000),
		memo: "invoice", op: t.Op(), reference: reference, firstKey: t.Key()}
	s.Books.Expect(inv.op)
	req := Transfer(inv.payer, inv.firstKey, inv.body(inv.amount))
	r := t.Do(req)
	story = strings.TrimPrefix(story+"\n"+what+" "+inv.reference+": "+req.String()+"  →  "+r.Short(), "\n")
	if !toldRan(r, inv.op) {
		if err := t.Reconcile(story, r.String(), s.Books); err != nil {
			return invoice{}, "", err
		}
		return invoice{}, "", t.Fail(story, r.String(), expected)
	}
	s.Books.Transfer(inv.op, inv.from, inv.to, inv.amount)
	if !r.Is(http.StatusCreated, "") || resourceID(r) == "" {
		// Told that it ran in another 2xx (an execution answered 200),
		// or in a 201 whose body names no transfer, the books agreeing:
		// a contract difference, and the invoice is paid, for the
		// check's probes to come.
		t.Differ(story, r.String(), expected+", its transfer's id in the body")
	}
	// The transfer the answer names: its body's id, or its Location's
	// ("" if neither names one).
	inv.firstID = answerID(r)
	return inv, story + ", " + cmp.Or(inv.firstID, "no transfer named"), nil
}

// payAgain sends inv's transfer again, of amount under key, told in the
// story as what, and checks that it is refused as a duplicate (see
// refusedAsDuplicate). It returns the story with it and the answer.
func (t *T) payAgain(story, what string, inv invoice, key string, amount int64, books *judging.Books) (string, Response, error) {
	req := Transfer(inv.payer, key, inv.body(amount))
	r := t.Do(req)
	story += "\n" + what + ": " + req.String() + "  →  " + r.Short()
	return story, r, t.refusedAsDuplicate(story, r, inv, books)
}

// refusedAsDuplicate checks r, the answer to a transfer that pays inv
// again: 409 duplicate-reference with the Location of inv's first
// transfer. The books are reconciled first: an invoice paid twice is a
// double, whatever the answer said.
func (t *T) refusedAsDuplicate(story string, r Response, inv invoice, books *judging.Books) error {
	if err := t.Reconcile(story, r.String(), books); err != nil {
		var f *judging.Failure
		if r.Is(http.StatusConflict, pDuplicateReference) && errors.As(err, &f) && (f.Harm == judging.Double || f.Harm == judging.MovedThoughRefused) {
			// The server found the reference taken and said so, and the
			// money moved all the same: the refusal shared a commit with
			// the transfer, a decision the check's own section does not
			// explain.
			f.Lesson = lesson8 + "#the-refusal-is-an-answer"
			f.Why = "the server answered 409 (nothing moved), and the books say the money moved: the transfer it made before it found the reference taken committed with the refusal, so the invoice was paid again and the client told it was not"
		}
		return err
	}
	expected := "409 " + pDuplicateReference + " with Location: " + inv.location() + " (the transfer that paid " + inv.reference + "); nothing moves"
	if !r.Is(http.StatusConflict, pDuplicateReference) {
		return t.Fail(story, r.String(), expected)
	}
	// A transfer whose answer named none (payAlike's) leaves no Location
	// to compare: the refusal's status and the books judge it.
	if got := r.Header.Get("Location"); inv.firstID != "" && got != inv.location() {
		return t.Fail(story, r.String()+"\nLocation: "+got, expected)
	}
	return nil
}

// checkTwoKeys catches a stage that knows nothing of references, one that
// records the reference after the money has committed (the second payment
// is refused only once it has moved), one that stores the refusal in the
// transaction that moved the money (or, on SQLite, in one of its own begun
// before that transaction has rolled back, which waits on its write lock
// and fails), and one that holds a reference per account, paying or paid,
// instead of per customer.
func checkTwoKeys(t *T) error {
	s, inv, story, err := t.paidInvoice(2)
	if err != nil {
		return err
	}
	story, _, err = t.payAgain(story, "another clerk pays it again, from a new form (a new key)", inv, t.Key(), inv.amount, s.Books)
	if err != nil {
		return err
	}
	// The reference is the customer's: the invoice is paid whichever of
	// A's accounts pays it, and to whichever of B's.
	for _, other := range []struct {
		from, to, what string
	}{
		{inv.from, s.B.Accounts[1], "to B's other account"},
		{s.A.Accounts[1], inv.to, "from A's other account"},
	} {
		again := inv
		again.from, again.to = other.from, other.to
		story, _, err = t.payAgain(story, "a clerk pays it again "+other.what+" (a new key)", again, t.Key(), inv.amount, s.Books)
		if err != nil {
			return err
		}
	}
	// Location must name the transfer that paid the invoice.
	got := t.Do(Request{Method: "GET", Path: inv.location(), Token: inv.payer.Token})
	var tr bank.Transfer
	if !got.Is(http.StatusOK, "") || json.Unmarshal(got.Body, &tr) != nil || tr.Reference != inv.reference || tr.Amount != inv.amount {
		return t.Fail(story+"\nGET "+inv.location(), got.String(),
			fmt.Sprintf("200 with the first transfer: reference %q, amount %d", inv.reference, inv.amount))
	}
	return nil
}

// checkTwoClerksPay catches a reference looked up before it is inserted,
// without a UNIQUE constraint to decide: every clerk that looks before the
// first insert pays. The core's latency holds every clerk between its
// claim and its business write, so that a look before the core call
// happens before any clerk's insert; the slow-begin fault holds every
// transaction that may write before it begins, so that a look after the
// core call, in a statement of its own, happens before any clerk's
// insert too, on SQLite as well, where the clerks leave the core one
// after the other, as their claims committed. The clerks sit at two
// desks that pay from two different accounts of A to two different
// accounts of B, each under an op of its own: on PostgreSQL the clerks of
// one desk queue behind each other's locks on their accounts (and on
// their op's execution count), but the two desks share no row, and the
// slow-commit fault holds the first two transfers to reach their COMMIT
// (on PostgreSQL one from each desk, whose clerks queue on the desk's
// rows), so that a look in the transaction that moved the money finds
// neither.
// A few rounds, each a new invoice, give the race more than one chance:
// on PostgreSQL the first round's clerks also wait for the server's pool
// to open their connections, one backend after another, which can set a
// clerk on an open connection more than the fault's delay ahead of the
// other desk; the later rounds find the connections open.
func checkTwoClerksPay(t *T) error {
	const clerks, desks, rounds, latency = 16, 2, 3, 50 * time.Millisecond
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	a, b, books := s.A, s.B, s.Books
	if err := t.Configure(labclient.Config{CoreLatency: latency}); err != nil {
		return err
	}
	// More than every transaction the clerks may begin: a claim, the
	// payment, a refusal stored, a release, in each round.
	if err := t.Arm(labctl.SlowBegin, 4*clerks*rounds); err != nil {
		return err
	}
	for round := range rounds {
		// The first two transfers to come to their COMMIT: on PostgreSQL
		// one from each desk (a right server commits one a round).
		if err := t.Arm(labctl.SlowCommit, desks); err != nil {
			return err
		}
		amount, ref := t.Amount(1_000, 20_000), t.reference()
		var ops [desks]string
		for d := range ops {
			ops[d] = t.Op()
			books.Expect(ops[d])
		}
		reqs := make([]Request, clerks)
		for i := range reqs {
			d := i % desks
			reqs[i] = Transfer(a, t.Key(), ReferencedBody(a.Accounts[d], b.Accounts[d], amount, ops[d], ref))
		}
		answers := t.Simultaneously(clerks, func(i int) Request { return reqs[i] })
		story := fmt.Sprintf("(core latency %v, every transaction held up %v before it begins, the first two transfers to reach their COMMIT %v before it) %d clerks pay invoice %s at once, each under a key of its own, at %d desks: desk 1 (clerks 1, 3, 5, …, op %s) from %s to %s, desk 2 (clerks 2, 4, 6, …, op %s) from %s to %s, released together (round %d of %d):\n%s",
			latency, fault.BeginDelay, fault.CommitDelay, clerks, ref, desks, ops[0], a.Accounts[0], b.Accounts[0], ops[1], a.Accounts[1], b.Accounts[1], round+1, rounds, reqs[0].String())
		// A transfer is booked for the desk it was paid from, which a 201
		// names: a server may tell one desk's clerk of the transfer the
		// other desk made.
		book := func(i int, r Response) {
			d := i % desks
			var paid struct {
				From string `json:"from"`
			}
			if json.Unmarshal(r.Body, &paid) == nil {
				if k := slices.Index(a.Accounts[:desks], paid.From); k >= 0 {
					d = k
				}
			}
			books.Transfer(ops[d], a.Accounts[d], b.Accounts[d], amount)
		}
		op := func(i int) string { return ops[i%desks] }
		if err := t.onePaid(story, answers, book, op, books); err != nil {
			return err
		}
	}
	if err := t.Arm(labctl.SlowCommit, 0); err != nil {
		return err
	}
	return t.Arm(labctl.SlowBegin, 0)
}

// checkTwoServersPay catches one payment per invoice decided in a
// process's memory: a look-up and an insert without a UNIQUE constraint,
// kept apart by a mutex, hold against clerks whose requests reach the same
// process, and a second process knows nothing of that mutex. The server
// runs as two processes on one database; clerks pay one invoice at once,
// in a few rounds, each a new invoice. The clerks of each process sit at
// a desk of its own, which pays from another of the payer's accounts to
// another of the payee's, so that the two processes' transfers share no
// row, and the slow-commit fault, armed in each process, holds the first
// transfer of each to reach its COMMIT: the clerk of the other process
// looks meanwhile, and finds nothing.
func checkTwoServersPay(t *T) error {
	const clerks, desks, rounds, latency = 16, 2, 3, 50 * time.Millisecond
	rt, s, err := t.twoServers(1_000_000)
	if err != nil {
		return err
	}
	a, b, books := s.A, s.B, s.Books
	if err := rt.Configure(labclient.Config{CoreLatency: latency}); err != nil {
		return err
	}
	arm := func(count int) error { return rt.ArmEverywhere(labctl.SlowCommit, count) }
	for round := range rounds {
		if err := arm(1); err != nil {
			return err
		}
		amount, ref := rt.Amount(1_000, 20_000), rt.reference()
		var ops [desks]string
		for d := range ops {
			ops[d] = rt.Op()
			books.Expect(ops[d])
		}
		reqs := make([]Request, clerks)
		for i := range reqs {
			d := i % desks
			reqs[i] = Transfer(a, rt.Key(), ReferencedBody(a.Accounts[d], b.Accounts[d], amount, ops[d], ref))
			reqs[i].Replica = d
		}
		answers := rt.Simultaneously(clerks, func(i int) Request { return reqs[i] })
		story := fmt.Sprintf("(two server processes on one database, core latency %v, the first transfer of each process to reach its COMMIT held %v before it) %d clerks pay invoice %s at once, each under a key of its own: desk 1 (clerks 1, 3, 5, …, op %s) through the first process from %s to %s, desk 2 (clerks 2, 4, 6, …, op %s) through the second from %s to %s, released together (round %d of %d):\n%s",
			latency, fault.CommitDelay, clerks, ref, ops[0], a.Accounts[0], b.Accounts[0], ops[1], a.Accounts[1], b.Accounts[1], round+1, rounds, reqs[0].String())
		// A transfer is booked for the desk it was paid from, which a 201
		// names.
		book := func(i int, r Response) {
			d := i % desks
			var paid struct {
				From string `json:"from"`
			}
			if json.Unmarshal(r.Body, &paid) == nil {
				if k := slices.Index(a.Accounts[:desks], paid.From); k >= 0 {
					d = k
				}
			}
			books.Transfer(ops[d], a.Accounts[d], b.Accounts[d], amount)
		}
		if err := rt.onePaid(story, answers, book, func(i int) string { return ops[i%desks] }, books); err != nil {
			return err
		}
	}
	return arm(0)
}

// onePaid judges the answers of clerks who paid one invoice at once:
// exactly one 201, and 409 duplicate-reference with its Location to every
// other clerk. The books are reconciled first, each transfer a 201 names
// booked once, with book(i, r), r the first clerk i's answer that names
// it (a 201, or another 2xx naming clerk i's op, toldRan): money that moved for a clerk told 409 is money moved though
// refused. Then 201s for more than one transfer are the invoice paid more
// than once, a double whichever ops the clerks sent; a second 201 for the
// same transfer is an answer the contract does not give, and moved
// nothing.
func (t *T) onePaid(story string, answers []Response, book func(i int, r Response), ops func(i int) string, books *judging.Books) error {
	got := Summarize(answers)
	var paid []int
	var transfers []string
	for i, r := range answers {
		if id := resourceID(r); toldRan(r, ops(i)) && id != "" && !slices.Contains(transfers, id) {
			paid, transfers = append(paid, i), append(transfers, id)
			book(i, r)
		}
	}
	if err := t.Reconcile(story, got, books); err != nil {
		return err
	}
	if len(paid) > 1 {
		// The payments after the first are the excess: each clerk's op
		// may have run once, but the invoice was paid more than once.
		var paying, excess []string
		clerks, made := map[string][]string{}, map[string][]string{}
		for n, i := range paid {
			op := ops(i)
			if !slices.Contains(paying, op) {
				paying = append(paying, op)
			}
			if n > 0 && !slices.Contains(excess, op) {
				excess = append(excess, op)
			}
			clerks[op] = append(clerks[op], strconv.Itoa(i+1))
			made[op] = append(made[op], resourceID(answers[i]))
		}
		got += fmt.Sprintf("\nthe invoice was paid %d times, each payment's clerk told 201:", len(paid))
		for _, op := range paying {
			who := "clerk "
			if len(clerks[op]) > 1 {
				who = "clerks "
			}
			got += fmt.Sprintf("\nop %s, %s%s: %s", op, who, strings.Join(clerks[op], ", "), strings.Join(made[op], ", "))
		}
		err := t.Harmful(judging.Double, story, got,
			"exactly one 201 Created: one invoice, one transfer; 409 "+pDuplicateReference+" to every other clerk")
		err.(*judging.Failure).Excess = excess
		return err
	}
	if len(paid) == 0 {
		return t.Fail(story, got, "exactly one 201 Created: one invoice, one transfer")
	}
	if !answers[paid[0]].Is(http.StatusCreated, "") {
		// The one payment told it ran in another 2xx: a contract
		// difference; the other clerks' refusals, and the next rounds,
		// are still judged.
		t.Differ(story, got, "exactly one 201 Created: one invoice, one transfer")
	}
	want := "/transfers/" + transfers[0]
	var told []string
	for i, r := range answers {
		if r.Is(http.StatusCreated, "") && resourceID(r) == transfers[0] {
			told = append(told, strconv.Itoa(i+1))
		}
	}
	if len(told) > 1 {
		return t.Fail(story, got+fmt.Sprintf("\nclerks %s: 201 for the same transfer %s", strings.Join(told, ", "), transfers[0]),
			"one transfer was made, so one clerk is told 201 Created, and every other clerk 409 "+pDuplicateReference+" with Location: "+want+", which tells them nothing moved this time (a 201 tells a clerk their payment was made)")
	}
	for i, r := range answers {
		if i == paid[0] {
			continue
		}
		if !r.Is(http.StatusConflict, pDuplicateReference) || r.Header.Get("Location") != want {
			err := t.Fail(story, got+fmt.Sprintf("\nclerk %d: %s, Location %q", i+1, r.String(), r.Header.Get("Location")),
				"409 "+pDuplicateReference+" with Location: "+want+" to every clerk but the one who paid, which tells them nothing moved this time (a 201 would tell them their payment was made); never a 5xx")
			if r.Is(http.StatusConflict, pDuplicateReference) {
				// The race was decided: only the answer's Location is wrong.
				return because(err, "the refusal's Location is how the clerk finds the transfer that paid the invoice: one that names another transfer, or none (the holder's id read before it was stored, or from a lookup other than the one that refused), sends the clerk to the wrong payment or to nothing, and the clerk cannot tell whether the invoice is paid")
			}
			return err
		}
	}
	return nil
}

// checkAfterExpiry catches a reference kept only as long as a key: in the
// key table, or purged with the keys. Without a reference that lasts, the
// late retry of the first request executes again once its key is gone.
func checkAfterExpiry(t *T) error {
	const retention = 2 * time.Hour
	s, inv, story, err := t.paidInvoice(2)
	if err != nil {
		return err
	}
	if err := t.Configure(labclient.Config{Retention: retention}); err != nil {
		return err
	}
	if err := t.Advance(retention + time.Minute); err != nil {
		return err
	}
	if _, err := t.Purge(); err != nil {
		return err
	}
	story += fmt.Sprintf("\n(retention %v; the lab clock moves on %v, past it; POST /lab/purge)", retention, retention+time.Minute)
	story, _, err = t.payAgain(story, "the first request's late retry, its key forgotten", inv, inv.firstKey, inv.amount, s.Books)
	if err != nil {
		return err
	}
	story, _, err = t.payAgain(story, "the invoice paid again under a new key", inv, t.Key(), inv.amount, s.Books)
	if err != nil {
		return err
	}
	// A reference is kept for ever: not a year, not as long as the law
	// keeps the books (five years for tax records, ten for a company's),
	// not until some purge. A century of 365-day years, some days short
	// of a hundred calendar years, is longer than any of them.
	const years = 100
	if err := t.Advance(years * 365 * 24 * time.Hour); err != nil {
		return err
	}
	if _, err := t.Purge(); err != nil {
		return err
	}
	story += fmt.Sprintf("\n(the lab clock moves on %d years of 365 days; POST /lab/purge)", years)
	_, _, err = t.payAgain(story, "the invoice paid once more, under a new key", inv, t.Key(), inv.amount, s.Books)
	return err
}

// checkEditedPayment catches a duplicate told by more of the request
// than its reference: the corrected amount, another memo, another of the
// payee's accounts with a corrected amount, another customer's account
// (the invoice paid to the wrong supplier first), or an account of the
// payer's own (a reference held only on a transfer to someone else) pays
// the invoice again.
func checkEditedPayment(t *T) error {
	s, inv, story, err := t.paidInvoice(3)
	if err != nil {
		return err
	}
	corrected := inv.amount + t.Amount(1, 10_000)
	story, _, err = t.payAgain(story, fmt.Sprintf("a clerk corrects the amount to %d and submits again, under a new key", corrected), inv, t.Key(), corrected, s.Books)
	if err != nil {
		return err
	}
	memo := inv
	memo.memo = "invoice, paid late"
	story, _, err = t.payAgain(story, fmt.Sprintf("a clerk changes the memo to %q and submits again, under a new key", memo.memo), memo, t.Key(), inv.amount, s.Books)
	if err != nil {
		return err
	}
	payee := inv
	payee.to = s.B.Accounts[1]
	corrected = inv.amount - t.Amount(1, 999)
	story, _, err = t.payAgain(story, fmt.Sprintf("a clerk pays it to B's other account, the amount corrected to %d, under a new key", corrected), payee, t.Key(), corrected, s.Books)
	if err != nil {
		return err
	}
	// The reference is the paying customer's: an invoice paid to the
	// wrong supplier is paid, and paying it again to another is a second
	// payment, whoever it goes to (a refund is an operation of its own).
	supplier := inv
	supplier.to = s.Customers[2].Accounts[0]
	story, _, err = t.payAgain(story, "a clerk finds it was paid to the wrong supplier and pays it to another customer, C, under a new key", supplier, t.Key(), inv.amount, s.Books)
	if err != nil {
		return err
	}
	// Nor is an account of the payer's own an exception: a transfer
	// between its own accounts moves money too, and the reference binds
	// it as it binds any other.
	own := inv
	own.to = s.A.Accounts[1]
	_, _, err = t.payAgain(story, "a clerk moves the invoice's money into A's own other account instead, under a new key", own, t.Key(), inv.amount, s.Books)
	return err
}

// checkRefusalReplayed catches a refusal that is not stored under its key
// (the key released, the refusal recomputed on every retry), one stored
// without its Location, and one marked Idempotent-Replayed the first time
// it is sent, as if "already paid" were a replay: only its retry is one.
// Then it catches a refusal that fails and gives the invoice back with its
// key (see failedRefusalKeepsPaid).
func checkRefusalReplayed(t *T) error {
	s, inv, story, err := t.paidInvoice(2)
	if err != nil {
		return err
	}
	key := t.Key()
	story, first, err := t.payAgain(story, "another clerk pays it again, under a new key", inv, key, inv.amount, s.Books)
	if err != nil {
		return err
	}
	if len(first.Header.Values("Idempotent-Replayed")) > 0 {
		return t.Fail(story, first.String(),
			"409 "+pDuplicateReference+" without Idempotent-Replayed: this is the request's own answer, decided now; the transfer that paid the invoice was another request's, and only a retry of this key gets a stored answer, marked as one")
	}
	retry := t.Do(Transfer(inv.payer, key, inv.body(inv.amount)))
	story += "\nits answer is lost, and its client retries with the same key  →  " + retry.Short()
	if err := t.Reconcile(story, retry.String(), s.Books); err != nil {
		return err
	}
	// The stored answer, told again: its status, Content-Type, Location
	// and JSON value. How it is spelled is S4.replay-byte-identical's
	// question, asked of every stored answer.
	d := replayValueMismatch(first, retry, "the original")
	if d != "" || !retry.Replayed() {
		got := retry.String() + "\nLocation: " + retry.Header.Get("Location")
		if d != "" {
			got += "\ncompared with the original's 409: " + d
		}
		return t.Fail(story, got,
			"the stored answer again: 409 "+pDuplicateReference+", the same JSON value, Location: "+inv.location()+", and Idempotent-Replayed: true")
	}
	return t.failedRefusalKeepsPaid()
}

// failedRefusalKeepsPaid pays an invoice, then pays it again under a new
// key while the key store fails once that payment is claimed: its refusal
// cannot be stored (503), and the key is not given back either. The
// invoice is still paid, by the first transfer: the retry of the refused
// payment, once the lease has expired, and a payment under a new key get
// 409 duplicate-reference with its Location. A failure that gives the
// reference back with the key (deleting it by customer and number)
// deletes the first transfer's, and the invoice is paid again.
func (t *T) failedRefusalKeepsPaid() error {
	return t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
		lease, err := t.lease()
		if err != nil {
			return false, err
		}
		inv, story, err := t.payInvoice("", "a clerk pays invoice", s, s.A, s.B.Accounts[0], t.reference(),
			"201 Created: the first transfer with this reference executes")
		if err != nil {
			return false, err
		}
		req := Transfer(inv.payer, t.Key(), inv.body(inv.amount))
		orig, held, err := t.failsAfterClaim(req, latency)
		if !held || err != nil {
			return false, err
		}
		story += fmt.Sprintf("\nanother clerk pays it again, under a new key: %s\n(claimed; while it waits on the core, the next 2 statements on idempotency_keys fail: the refusal's completion, and the release after it)  →  %s", req.String(), orig.Short())
		if err := t.Reconcile(story, orig.String(), s.Books); err != nil {
			return true, err
		}
		if !orig.Is(http.StatusServiceUnavailable, pUnavailable) && !orig.Is(http.StatusConflict, pDuplicateReference) {
			return true, t.Fail(story, orig.String(), "503 "+pUnavailable+": the refusal could not be stored (or 409 "+pDuplicateReference+" if the store was not needed again); nothing moves")
		}
		final, retries, err := t.retryUntilDone(req, lease, story+"\nthen the store is back", "409 "+pDuplicateReference+" with Location: "+inv.location()+"; nothing moves")
		if err != nil {
			return true, err
		}
		story += "\nthen the store is back, and its client retries the same request" + retries
		if err := t.refusedAsDuplicate(story, final, inv, s.Books); err != nil {
			return true, because(err, failedRefusalWhy)
		}
		story, _, err = t.payAgain(story, "then a clerk pays the invoice again, under a new key", inv, t.Key(), inv.amount, s.Books)
		return true, because(err, failedRefusalWhy)
	})
}

// failedRefusalWhy is why failedRefusalKeepsPaid fails.
const failedRefusalWhy = "a payment refused as a duplicate that then fails (its refusal cannot be stored) paid nothing, and the reference it ran into is the first transfer's: a failure that gives the reference back with the key, by customer and number, deletes the first transfer's, and the invoice is paid again"

// checkOtherCustomerReference catches a reference that is not the paying
// customer's own: unique across every customer (B's invoice number is
// refused because A used it), held under the customer paid instead of the
// one paying (C's invoice to B is refused because A paid B one with that
// number), or, when a customer pays its own invoice again, looked up by
// the number alone (the refusal names A's transfer, which B may not read).
func checkOtherCustomerReference(t *T) error {
	s, inv, story, err := t.paidInvoice(3)
	if err != nil {
		return err
	}
	const expected = "201 Created with a transfer of its own: a reference is unique per customer, the customer who pays"
	b, c := s.B, s.Customers[2]
	mine, story, err := t.payInvoice(story, "another customer, B, pays an invoice of its own to A, with the same number,", s, b, s.A.Accounts[0], inv.reference, expected)
	if err != nil {
		return err
	}
	theirs, story, err := t.payInvoice(story, "a third customer, C, pays an invoice of its own to B, whom A paid, with the same number,", s, c, inv.to, inv.reference, expected)
	if err != nil {
		return err
	}
	if inv.firstID != "" && (mine.firstID == inv.firstID || theirs.firstID == inv.firstID) {
		return t.Fail(story, "", expected)
	}
	// B pays its own invoice again: the refusal names B's transfer. A
	// stage that holds no reference pays it again; S8.two-keys fails
	// that, and this check, about whose reference it is, lets it be.
	again := mine
	again.op = t.Op()
	s.Books.Expect(again.op)
	req := Transfer(b, t.Key(), again.body(again.amount))
	r := t.Do(req)
	story += "\nB pays its invoice again, under a new key: " + req.String() + "  →  " + r.Short()
	if r.Is(http.StatusCreated, "") {
		s.Books.Transfer(again.op, again.from, again.to, again.amount)
		return t.Reconcile(story, r.String(), s.Books)
	}
	if toldRan(r, again.op) {
		// Told that it ran in another 2xx: the books expect it, and the
		// answer is judged as any other that is not the refusal.
		s.Books.Transfer(again.op, again.from, again.to, again.amount)
	}
	return t.refusedAsDuplicate(story, r, mine, s.Books)
}

// checkWithoutReference catches a transfer without a reference held to
// the empty one: the second transfer without a reference is refused.
func checkWithoutReference(t *T) error {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	a, from, to := s.A, s.A.Accounts[0], s.B.Accounts[0]
	amount := t.Amount(1_000, 100_000)
	var story string
	pay := func(what, body, op string) error {
		s.Books.Expect(op)
		req := Transfer(a, t.Key(), body)
		r := t.Do(req)
		story = strings.TrimPrefix(story+"\n"+what+": "+req.String()+"  →  "+r.Short(), "\n")
		if toldRan(r, op) {
			s.Books.Transfer(op, from, to, amount)
		}
		if err := t.Reconcile(story, r.String(), s.Books); err != nil {
			return err
		}
		if !r.Is(http.StatusCreated, "") {
			return t.Fail(story, r.String(), "201 Created: a new key, and no reference to hold it to, is a new transfer")
		}
		return nil
	}
	op := t.Op()
	if err := pay("a transfer without a reference", TransferBody(from, to, amount, op), op); err != nil {
		return err
	}
	op = t.Op()
	if err := pay("another, the same amount to the same account, under its own key", TransferBody(from, to, amount, op), op); err != nil {
		return err
	}
	op = t.Op()
	if err := pay("one with a reference", ReferencedBody(from, to, amount, op, t.reference()), op); err != nil {
		return err
	}
	op = t.Op()
	return pay("and one more without", TransferBody(from, to, amount, op), op)
}

// checkReferenceValidated holds the reference to the contract of every
// member of a transfer's body: refused with 400 before the key is claimed.
func checkReferenceValidated(t *T) error {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	a, from, to := s.A, s.A.Accounts[0], s.B.Accounts[0]
	amount, op, key := t.Amount(1_000, 100_000), t.Op(), t.Key()
	s.Books.Expect(op)
	prefix := fmt.Sprintf(`{"from":%q,"to":%q,"amount":%d,"metadata":{"op":%q},"reference":`, from, to, amount, op)
	var story string
	for _, bad := range []struct{ value, because string }{
		{`42`, "a number"},
		{`null`, "null"},
		{`""`, "empty"},
		{`"` + strings.Repeat("가", 65) + `"`, "65 characters"},
		{`"INV-\u0007"`, "a control character"},
		{`"INV-7 "`, "a space at the end"},
		{`" INV-7"`, "a space at the start"},
	} {
		req := Transfer(a, key, prefix+bad.value+"}")
		r := t.Do(req)
		story = strings.TrimPrefix(story+"\n"+req.String()+"  ("+bad.because+")  →  "+r.Short(), "\n")
		if !r.Is(http.StatusBadRequest, problem.InvalidRequest.URI()) {
			return t.Fail(story, r.String(), "400 "+problem.InvalidRequest.URI()+": the reference must be 1 to 64 printable characters, with no space at either end; nothing stored, nothing moves")
		}
	}
	if err := t.Reconcile(story, "", s.Books); err != nil {
		return err
	}
	req := Transfer(a, key, ReferencedBody(from, to, amount, op, t.reference()))
	r := t.Do(req)
	story += "\nthen the same key with a valid reference: " + req.String() + "  →  " + r.Short()
	if toldRan(r, op) {
		s.Books.Transfer(op, from, to, amount)
	}
	if err := t.Reconcile(story, r.String(), s.Books); err != nil {
		return err
	}
	if !r.Is(http.StatusCreated, "") {
		return t.Fail(story, r.String(), "201 Created: the refused bodies claimed nothing, so the key is still new")
	}
	return nil
}

// checkSimilarReferences catches references compared loosely: folded to
// one case, cut short (to 64 bytes too, which a number of 64 characters
// in ASCII fits and one in Hangul does not), with look-alike characters
// of another script or width folded together (NFKC), with their dashes
// folded into the hyphen or their accents taken off, with their
// separators taken out or their spaces collapsed, or, made of digits
// alone, stored as numbers. "INV-7" and "inv-7" are two invoices, and so
// are "INV-12-3" and "INV-1-23", and "0042" and "42"; refusing the second
// leaves it unpaid. Some of them are then paid again: the refusal must
// name that invoice's own transfer, which a holder looked up loosely (in
// one case, with LIKE, where _ and % match other characters, or with
// GLOB, where ? and * do) does not.
func checkSimilarReferences(t *T) error {
	s, inv, story, err := t.paidInvoice(2)
	if err != nil {
		return err
	}
	ref := inv.reference
	last := []rune(ref)[len([]rune(ref))-1]
	// Two numbers of the longest length allowed, alike but for their
	// last character: the second is refused where a reference is cut
	// short.
	long := ref + "/" + strings.Repeat("0", request.MaxReference-len(ref)-2)
	// The same in Hangul, three bytes a character: the limit counts
	// characters, and a number cut to 64 bytes loses its last ones, which
	// no number in ASCII does.
	hangul := ref + "/" + strings.Repeat("가", request.MaxReference-len(ref)-2)
	// Numbers alike but for their separators: where a hyphen stands, or
	// whether it is one, tells INV-12-3 from INV-1-23.
	sep := strings.LastIndex(ref, "-")
	// Numbers made of digits alone: a column that stores them as numbers
	// (on SQLite, one declared STRING, which has NUMERIC affinity) makes
	// a leading 0 vanish, and keeps a number of twenty digits, too large
	// for 64 bits, in floating point, where its last digits are lost.
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, ref)
	twenty := digits + strings.Repeat("0", 19-len(digits))
	return t.payAlike(s, inv, story, []alikeReference{
		{strings.ToLower(ref), "in lower case", "", true},
		{ref + "-2", "with a suffix", "", false},
		{strings.Replace(ref, "I", "\u0406", 1), "with a Cyrillic І for the Latin I", "", false},
		{strings.TrimSuffix(ref, string(last)) + string(last-'0'+'\uff10'), "with a full-width last digit", "", false},
		// A dash that is not the ASCII hyphen, as a PDF or a word
		// processor writes one, and an accented letter: folding dashes
		// together, or taking accents off, makes each the first invoice.
		{strings.Replace(ref, "-", "\u2013", 1), "with an en dash (U+2013) for its first hyphen", "", false},
		{strings.Replace(ref, "I", "\u00cd", 1), "with an accented \u00cd (U+00CD) for its I", "", false},
		{long + "1", fmt.Sprintf("%d characters long", request.MaxReference), "", false},
		{long + "2", "as long, and only its last character another", long + "1", false},
		{hangul + "1", fmt.Sprintf("%d characters long, in Hangul after its number (%d bytes)", request.MaxReference, len(hangul)+1), "", false},
		{hangul + "2", "as long, in Hangul too, and only its last character another", hangul + "1", false},
		{ref[:sep] + ref[sep+1:sep+2] + "-" + ref[sep+2:], "with its last hyphen one character later", "", false},
		{strings.Replace(ref, "-", " ", 1), "with a space for its first hyphen", "", false},
		{strings.Replace(ref, "-", "  ", 1), "with two spaces for its first hyphen", "", false},
		{strings.ReplaceAll(ref, "-", ""), "without its hyphens", "", false},
		{twenty + "1", "twenty digits long, no letters", "", false},
		{twenty + "2", "as long, no letters either, and only its last digit another", twenty + "1", false},
		{digits, "made of its digits alone", "", false},
		{"0" + digits, "with a 0 before those digits", digits, false},
		{strings.Replace(ref, "-", "_", 1), "with an underscore for its first hyphen", "", true},
		{ref[:sep] + "%", "with a % for its last part", "", true},
		// A GLOB pattern's ? matches any one character: looked up with
		// GLOB, this number, paid again, finds the first invoice's
		// transfer, which comes first whether the lookup reads the rows
		// in their order or the index's.
		{strings.TrimSuffix(ref, string(last)) + "?", "with a ? for its last digit", "", true},
	})
}

// checkReferenceWithQuotes catches a reference spliced into the SQL
// between quotes (fmt.Sprintf, with '%s' or %q): an invoice number with
// an apostrophe or a double quote ends the quoted string, and a
// statement that holds it or finds its holder cannot even run, so the
// invoice is never paid, or paid again gets a 5xx instead of 409.
func checkReferenceWithQuotes(t *T) error {
	s, inv, story, err := t.paidInvoice(2)
	if err != nil {
		return err
	}
	return t.payAlike(s, inv, story, []alikeReference{
		{strings.Replace(inv.reference, "-", "'", 1), "with an apostrophe for its first hyphen", "", true},
		// Quoted with Go's %q instead, the number goes between double
		// quotes, which SQLite reads as a string where no column has
		// that name, and a double quote in it becomes \", which is no
		// SQL escape.
		{strings.Replace(inv.reference, "-", `"`, 1), "with a double quote for its first hyphen", "", true},
	})
}

// alikeReference is an invoice number alike to that of a check's first
// invoice: what tells how in the story; not, where set, is the number it
// is alike to, if not the first invoice's (the second of a long pair is
// alike to the first of it); again marks it to be paid a second time
// once every one is paid.
type alikeReference struct {
	reference, what, not string
	again                bool
}

// payAlike has inv's payer pay an invoice numbered after each of refs,
// under a key of its own, and expects each to be paid with a transfer of
// its own; then it pays again those marked again, and expects each
// refusal to name the invoice's own transfer, not the first invoice's,
// which a lookup in one case or with LIKE finds too.
func (t *T) payAlike(s Scenario, inv invoice, story string, refs []alikeReference) error {
	var paid []invoice
	for _, v := range refs {
		// Invoices of at most 30,000 after a first of at most 100,000:
		// the twenty-one of S8.similar-references leave the opening
		// balance of 1,000,000 at least 270,000, enough for any invoice
		// paid again, and every answer is about the reference, never
		// about the funds (with up to 100,000 each, a paid-again invoice
		// was refused for funds, 422, before its reference was looked
		// at).
		op, amount := t.Op(), t.Amount(1_000, 30_000)
		s.Books.Expect(op)
		req := Transfer(inv.payer, t.Key(), ReferencedBody(inv.from, inv.to, amount, op, v.reference))
		r := t.Do(req)
		story += "\nanother invoice, its number " + v.what + ": " + req.String() + "  →  " + r.Short()
		if toldRan(r, op) {
			s.Books.Transfer(op, inv.from, inv.to, amount)
		}
		if err := t.Reconcile(story, r.String(), s.Books); err != nil {
			return err
		}
		because := fmt.Sprintf("%q is not %q; references are compared exactly, as the customer wrote them", v.reference, cmp.Or(v.not, inv.reference))
		// The transfer the answer names: its body's id, or its
		// Location's.
		id := answerID(r)
		if !toldRan(r, op) || (id != "" && id == inv.firstID) {
			if r.ServerFailed() {
				// Refused for no other invoice: the server could not take
				// this number at all (a quote spliced into the SQL).
				because = fmt.Sprintf("%q is a valid invoice number, and every statement must take it as it is, whatever characters it holds", v.reference)
			}
			return t.Fail(story, r.String(), "201 Created with a transfer of its own: "+because)
		}
		if !r.Is(http.StatusCreated, "") || resourceID(r) == "" {
			// Told it ran in another 2xx, or in a 201 whose body names
			// no transfer, the books agreeing: a contract difference;
			// the next numbers and the invoices paid again still run.
			t.Differ(story, r.String(), "201 Created with a transfer of its own, its id in the body: "+because)
		}
		if v.again {
			paid = append(paid, invoice{payer: inv.payer, from: inv.from, to: inv.to, amount: amount, memo: "invoice",
				op: op, reference: v.reference, firstID: id})
		}
	}
	for _, p := range paid {
		var err error
		story, _, err = t.payAgain(story, "invoice "+p.reference+" paid again (a new key)", p, t.Key(), p.amount, s.Books)
		if err != nil {
			return err
		}
	}
	return nil
}

// checkEqualLookingReference catches a reference compared byte for byte
// before it is normalised: "café" with a precomposed é and "café" with e
// and a combining accent are one invoice, and the second pays it again.
func checkEqualLookingReference(t *T) error {
	s, inv, story, err := t.paidInvoice(2)
	if err != nil {
		return err
	}
	// Told it ran in another 2xx (payInvoice): a contract difference, and
	// the invoice is paid, for the payment with a combining accent.
	nfc, story, err := t.payInvoice(story, "with é precomposed (U+00E9), the clerk pays invoice", s, inv.payer, inv.to,
		fmt.Sprintf("caf\u00e9-%d", t.rng.IntN(1_000_000)), "201 Created: the first transfer with this reference executes")
	if err != nil {
		return err
	}
	nfd := nfc
	nfd.reference = strings.Replace(nfc.reference, "\u00e9", "e\u0301", 1)
	_, _, err = t.payAgain(story, "another clerk pays it again, typed as e and a combining accent (U+0065 U+0301)", nfd, t.Key(), nfd.amount, s.Books)
	return err
}

// checkRefusedLeavesPayable catches a reference held before the transfer's
// outcome is known (inserted first, or kept when the transfer is refused):
// after a refusal, the invoice can never be paid. It then catches one held
// outside the transaction that moves the money (see failedLeavesPayable).
func checkRefusedLeavesPayable(t *T) error {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	a, books := s.A, s.Books
	inv := invoice{payer: a, from: a.Accounts[0], to: s.B.Accounts[0], amount: t.Amount(1_000, 100_000), memo: "invoice", op: t.Op(), reference: t.reference()}
	// The daily limit is lowered on the other account, which the refused
	// payment comes from.
	limited := a.Accounts[1]
	cur, err := t.readSettings("", a, limited)
	if err != nil {
		return err
	}
	low := cur.Settings
	low.DailyLimit = inv.amount - 1
	reqL := putSettings(a, limited, low, cur.ETag)
	if _, err := t.saved("", reqL, t.Do(reqL), low); err != nil {
		return err
	}
	story := "(" + describe(reqL) + "  →  200)"
	for _, p := range []struct {
		from, to, what string
		amount         int64
		status         int
		ptype          string
	}{
		{inv.from, inv.to, "more than the account holds", s.Opening + inv.amount, http.StatusUnprocessableEntity, pInsufficient},
		{limited, inv.to, "over the daily limit of the account it comes from", inv.amount, http.StatusUnprocessableEntity, pDailyLimit},
		{inv.from, "acc_nosuchacc", "to an account that does not exist", inv.amount, http.StatusUnprocessableEntity, problem.UnknownAccount.URI()},
	} {
		op := t.Op()
		books.Expect(op)
		req := Transfer(a, t.Key(), ReferencedBody(p.from, p.to, p.amount, op, inv.reference))
		r := t.Do(req)
		story += "\ninvoice " + inv.reference + ", paid " + p.what + ": " + req.String() + "  →  " + r.Short()
		if err := t.Reconcile(story, r.String(), books); err != nil {
			return err
		}
		if !r.Is(p.status, p.ptype) {
			return t.Fail(story, r.String(), fmt.Sprintf("%d %s, and nothing moves", p.status, p.ptype))
		}
	}
	books.Expect(inv.op)
	req := Transfer(a, t.Key(), inv.body(inv.amount))
	r := t.Do(req)
	story += "\nthen the invoice paid as it should be, under a new key: " + req.String() + "  →  " + r.Short()
	if toldRan(r, inv.op) {
		books.Transfer(inv.op, inv.from, inv.to, inv.amount)
	}
	if err := t.Reconcile(story, r.String(), books); err != nil {
		return err
	}
	const payable = "201 Created: every earlier payment was refused, nothing paid the invoice, so it is still payable; a refused transfer holds no reference"
	if !toldRan(r, inv.op) {
		return t.Fail(story, r.String()+"\nLocation: "+r.Header.Get("Location"), payable)
	}
	if !r.Is(http.StatusCreated, "") {
		// Told it ran in another 2xx: a contract difference; a reference
		// held outside the transaction is still looked for.
		t.Differ(story, r.String(), payable)
	}
	if err := t.failedLeavesPayable(); err != nil {
		return err
	}
	return t.crashedLeavesPayable()
}

// crashedLeavesPayable pays an invoice on a server in a child process that
// dies inside the transfer, before the money's commit, restarts it, and
// pays the invoice under a new key: nothing paid it, so that payment must
// execute. A reference held, or reserved, in a statement of its own before
// the money's transaction commits survives the crash, names no transfer,
// and the invoice can never be paid: the crash leaves no failure behind
// for the server to give the reference back on.
func (t *T) crashedLeavesPayable() error {
	c, err := t.OnChild()
	if err != nil {
		return err
	}
	s, err := c.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	inv := c.invoiceOf(s)
	s.Books.Expect(inv.op)
	req := Transfer(inv.payer, inv.firstKey, inv.body(inv.amount))
	stranded, err := c.strand(req)
	if err != nil {
		return err
	}
	story := fmt.Sprintf("invoice %s paid: %s\n(armed: crash-in-transfer: the server dies inside the transfer, before its commit)  →  %s\nthe server restarts on the same database file",
		inv.reference, req.String(), stranded.Short())
	again := Transfer(inv.payer, c.Key(), inv.body(inv.amount))
	// The clerk waits crashedPaymentPatience: nothing runs that the
	// payment could be waiting on.
	ctx, cancel := context.WithTimeout(c.ctx, crashedPaymentPatience)
	r := c.sendWith(ctx, "check", again)
	cancel()
	story += "\nthen another clerk pays the invoice, from a new form (a new key): " + again.String() + "  →  " + r.Short()
	if toldRan(r, inv.op) {
		s.Books.Transfer(inv.op, inv.from, inv.to, inv.amount)
	}
	if err := c.Reconcile(story, r.String(), s.Books); err != nil {
		return err
	}
	const payable = "201 Created: the crashed payment's transaction never committed, so nothing paid the invoice, and it is still payable"
	if r.Is(http.StatusConflict, pDuplicateReference) {
		return c.Harmful(judging.ToldDuplicate, story, r.String()+"\nLocation: "+r.Header.Get("Location"),
			payable+". A reference held, or reserved, before the money's commit, in a statement of its own, outlives the crash that rolls the money back")
	}
	if r.Err != nil {
		got := "no answer: " + r.Err.Error()
		if errors.Is(r.Err, context.DeadlineExceeded) {
			got = fmt.Sprintf("no answer within %v, when the clerk gave up", crashedPaymentPatience)
		}
		return c.Harmful(judging.NoUsableAnswer, story, got,
			payable+". A payment that waits on a reference held, or reserved, before the money's commit waits for ever once a crash has rolled that money back: the invoice can never be paid")
	}
	if !toldRan(r, inv.op) {
		return c.Fail(story, r.String()+"\nLocation: "+r.Header.Get("Location"), payable)
	}
	if !r.Is(http.StatusCreated, "") {
		c.Differ(story, r.String(), payable)
	}
	return nil
}

// crashedPaymentPatience is how long S8.refused-leaves-payable's clerk
// waits for the payment of an invoice whose first payment died with its
// server: on a restarted server nothing runs that it could wait on.
const crashedPaymentPatience = 5 * time.Second

// failsAfterClaim holds req, a payment, on the core for latency (see
// Hold), makes the key store fail for the next two statements on the key
// table once its key is claimed (see storeFailsAfterClaim), and returns
// its answer. It reports false if the payment was not seen held in time:
// WhileHeld then tries again with a longer latency.
func (t *T) failsAfterClaim(req Request, latency time.Duration) (Response, bool, error) {
	held, err := t.Hold(req, latency)
	if err != nil {
		return Response{}, false, err
	}
	if !held.Seen || !held.Early() {
		return Response{}, false, t.unheld(held, "whether the payment holds its key in progress while it waits on the core")
	}
	orig, err := t.storeFailsAfterClaim(held)
	return orig, true, err
}

// failedLeavesPayable pays an invoice whose key store fails while the
// payment waits on the core: its completion fails, its transaction rolls
// back (503), and the reference must roll back with the money, so that a
// retry, once the lease has expired, pays the invoice. A reference held
// outside that transaction (on the database handle) commits before the
// money, stays when the money rolls back, and names a transfer that never
// was: the retry is refused as a duplicate of it, and the invoice is never
// paid. On SQLite such a reference waits for the write lock its own
// transaction holds, and the earlier payments fail already.
func (t *T) failedLeavesPayable() error {
	return t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
		lease, err := t.lease()
		if err != nil {
			return false, err
		}
		inv := t.invoiceOf(s)
		s.Books.Expect(inv.op)
		req := Transfer(inv.payer, inv.firstKey, inv.body(inv.amount))
		orig, held, err := t.failsAfterClaim(req, latency)
		if !held || err != nil {
			return false, err
		}
		story := fmt.Sprintf("invoice %s paid: %s\n(claimed; while it waits on the core, the next 2 statements on idempotency_keys fail: the completion, and the release after it)  →  %s", inv.reference, req.String(), orig.Short())
		failed := "503 " + pUnavailable + ": the payment could not be completed, so its transaction rolled back, money and reference (or 201 Created if the store was not needed again)"
		if !toldRan(orig, inv.op) && !orig.Is(http.StatusServiceUnavailable, pUnavailable) {
			return true, t.Fail(story, orig.String(), failed)
		}
		if toldRan(orig, inv.op) && !orig.Is(http.StatusCreated, "") {
			// Told it ran in another 2xx: a contract difference; the
			// retry and the books still judge.
			t.Differ(story, orig.String(), failed)
		}
		const expected = "201 Created: the failed attempt's transaction rolled back, its transfer and its reference with it, so nothing paid the invoice, and the retry, once the lease has expired, pays it"
		final, retries, err := t.retryUntilDone(req, lease, story+"\nthen the store is back", expected)
		if err != nil {
			return true, err
		}
		story += "\nthen the store is back, and its client retries the same request" + retries
		if toldAnyRan(inv.op, orig, final) {
			s.Books.Transfer(inv.op, inv.from, inv.to, inv.amount)
		}
		if err := t.Reconcile(story, final.String(), s.Books); err != nil {
			return true, err
		}
		if final.Is(http.StatusConflict, pDuplicateReference) {
			return true, t.Harmful(judging.ToldDuplicate, story, final.String()+"\nLocation: "+final.Header.Get("Location"),
				expected+". A reference held outside the money's transaction commits before the money, stays when the money rolls back, and names a transfer that never was")
		}
		if !toldRan(final, inv.op) {
			return true, t.Fail(story, final.String(), expected)
		}
		if !final.Is(http.StatusCreated, "") {
			t.Differ(story, final.String(), expected)
		}
		return true, nil
	})
}
