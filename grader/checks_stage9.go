package grader

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/grader/timeline"
	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/core"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/pgdb"
	"idemlab/kit/problem"
	"idemlab/kit/server"
)

// drainWithin is how long the checks give the relay to empty the outbox:
// it runs at least every 20 ms, so only a stuck relay takes this long.
const drainWithin = 10 * time.Second

// owed are the postings a check's transfers owe the core, by transfer id.
type owed map[string]core.Posting

// payments makes n transfers from A's first account to B's, each under a
// fresh key, and checks that each executes. It returns what they owe the
// core and the story, or a failure.
func (t *T) payments(s Scenario, n int, story *[]string) (owed, error) {
	want := owed{}
	for range n {
		if err := t.payment(s, want, story); err != nil {
			return nil, err
		}
	}
	return want, nil
}

// payment is one of payments' transfers: from A's first account to one
// of B's, under a fresh key, added to want.
func (t *T) payment(s Scenario, want owed, story *[]string) error {
	return t.pay(s, want, s.A, s.A.Accounts[0], s.B.Accounts[t.rng.IntN(len(s.B.Accounts))], t.Amount(1_000, 50_000), t.Key(), story)
}

// pay makes one transfer of c's, from one of c's accounts, under key,
// checks that it executes, books it and adds what it owes the core to
// want; or it returns the failure.
func (t *T) pay(s Scenario, want owed, c bank.Customer, from, to string, amount int64, key string, story *[]string) error {
	return t.payRef(s, want, c, from, to, amount, key, "", story)
}

// payRef is pay with a reference, when reference is not empty.
func (t *T) payRef(s Scenario, want owed, c bank.Customer, from, to string, amount int64, key, reference string, story *[]string) error {
	return t.payThrough(0, s, want, c, from, to, amount, key, reference, story)
}

// payThrough is payRef sent to server process replica (see OnReplicas),
// which the story names when the target has several.
func (t *T) payThrough(replica int, s Scenario, want owed, c bank.Customer, from, to string, amount int64, key, reference string, story *[]string) error {
	op := t.Op()
	s.Books.Expect(op)
	body := TransferBody(from, to, amount, op)
	if reference != "" {
		body = ReferencedBody(from, to, amount, op, reference)
	}
	req := Transfer(c, key, body)
	req.Replica = replica
	r := t.Do(req)
	line := req.String() + "  →  " + r.Short()
	if len(t.target.Replicas) > 0 {
		line = fmt.Sprintf("process %d: %s", replica+1, line)
	}
	*story = append(*story, line)
	const executes = "201 Created: the transfer executes, whatever the core ledger is doing"
	if !toldRan(r, op) || resourceID(r) == "" {
		return t.Fail(strings.Join(*story, "\n"), r.String(), executes)
	}
	// Told that it ran in another 2xx naming op and its transfer: a
	// contract difference, and the posting is judged as for a 201.
	if !r.Is(201, "") {
		t.Differ(strings.Join(*story, "\n"), r.String(), executes)
	}
	s.Books.Transfer(op, from, to, amount)
	id := resourceID(r)
	want[id] = core.Posting{TransferID: id, From: from, To: to, Amount: amount}
	return nil
}

// coreScenario is a stage 9 check's start: two customers whose accounts
// open with opening each, on a server whose core ledger the check
// watches (or could-not-observe, see watchesCore).
func (t *T) coreScenario(opening int64) (Scenario, error) {
	if err := t.watchesCore(); err != nil {
		return Scenario{}, err
	}
	return t.Scenario(2, opening)
}

// coreDownScenario is coreScenario with the core ledger down: the check
// brings it back with up, which it also defers (up twice is up once).
func (t *T) coreDownScenario(opening int64) (s Scenario, up func(), err error) {
	if s, err = t.coreScenario(opening); err != nil {
		return Scenario{}, nil, err
	}
	faults := &t.Core().Faults
	faults.SetDown(true)
	return s, func() { faults.SetDown(false) }, nil
}

// postedOnce reconciles the money, waits for the outbox to drain, and
// checks the core's postings against want: each transfer exactly once,
// with its accounts and amount, and nothing else; and no dead letters.
func (t *T) postedOnce(story string, s Scenario, want owed) error {
	return t.delivered(story, s, want, nil)
}

// delivered is postedOnce where the core refuses the transfers in
// forGood for good: each of them must be set aside as a dead letter with
// the core's answer as it came (core.Faults.Answer), status and body, and
// every other transfer of want posted once.
func (t *T) delivered(story string, s Scenario, want owed, forGood []string) error {
	if err := t.Reconcile(story, "", s.Books); err != nil {
		return err
	}
	pending, err := t.Drained(drainWithin)
	if err != nil {
		return err
	}
	ps, err := t.Postings()
	if err != nil {
		return err
	}
	st, err := t.State()
	if err != nil {
		return err
	}
	dead := map[string]bank.DeadLetter{}
	for _, d := range st.DeadLetters {
		dead[d.TransferID] = d
	}
	got := map[string][]core.Receipt{}
	for _, p := range ps {
		got[p.TransferID] = append(got[p.TransferID], p)
	}
	expected := fmt.Sprintf("each of the %d transfers posted once to the core ledger, and the outbox empty", len(want))
	if len(want) == 1 {
		expected = "the transfer posted once to the core ledger, and the outbox empty"
	}
	seen := postingsSeen(ps, pending, int64(len(st.DeadLetters)))
	var missing, twice, wrong, extra, setAside, deadHeld, unnamed, misanswered, deadSent []string
	var answers []string
	for id, w := range want {
		d, isDead := dead[id]
		switch rs := got[id]; {
		case slices.Contains(forGood, id):
			a, sent := t.Core().Faults.Answer(id)
			answered := answerText(a.Status, string(a.Body))
			if !sent {
				answered = "nothing: it never received it"
			}
			answers = append(answers, id+": "+answered)
			switch {
			case !isDead:
				unnamed = append(unnamed, fmt.Sprintf("%s (the core answered %s)", id, answered))
			case d.Status != a.Status || d.Answer != string(a.Body):
				misanswered = append(misanswered, fmt.Sprintf("%s (stored %s; the core answered %s)", id, answerText(d.Status, d.Answer), answered))
			case d.SentAt != "":
				deadSent = append(deadSent, fmt.Sprintf("%s (set aside at %s, marked sent at %s)", id, d.At, d.SentAt))
			}
		case isDead && len(rs) == 0:
			setAside = append(setAside, fmt.Sprintf("%s (%d %s)", id, d.Status, d.Answer))
		case isDead && len(rs) == 1:
			deadHeld = append(deadHeld, fmt.Sprintf("%s (set aside with %d %s; the core posted it under key %s)", id, d.Status, d.Answer, rs[0].Key))
		case len(rs) == 0:
			missing = append(missing, id)
		case len(rs) > 1:
			twice = append(twice, fmt.Sprintf("%s ×%d (keys %s)", id, len(rs), keysOf(rs)))
		case rs[0].From != w.From || rs[0].To != w.To || rs[0].Amount != w.Amount:
			wrong = append(wrong, fmt.Sprintf("%s as %s→%s %d, not %s→%s %d", id, rs[0].From, rs[0].To, rs[0].Amount, w.From, w.To, w.Amount))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			extra = append(extra, id)
		}
	}
	// A transfer never posted whose row is marked sent was marked before
	// the core took it: said so, not just "never posted".
	var markedSent []string
	if len(missing) > 0 {
		listed, err := t.transfersListed(missing)
		if err != nil {
			return err
		}
		var unsent []string
		for _, id := range missing {
			if at := listed[id].OutboxSentAt; at != "" {
				markedSent = append(markedSent, fmt.Sprintf("%s (marked sent at %s)", id, at))
			} else {
				unsent = append(unsent, id)
			}
		}
		missing = unsent
	}
	for _, list := range [][]string{missing, markedSent, twice, wrong, extra, setAside, deadHeld, unnamed, misanswered, deadSent, answers} {
		sort.Strings(list)
	}
	if len(forGood) > 0 {
		expected = fmt.Sprintf("each of the %d transfers the core takes posted once; each it refuses for good set aside as a dead letter with its answer, status and body as they came, and not marked sent (%s); and nothing left owed",
			len(want)-len(forGood), strings.Join(answers, "; "))
	}
	// postedRight reports whether the core holds id's posting once, as it
	// was made: its money reached the core, whatever became of its row.
	postedRight := func(id string) bool {
		rs, w := got[id], want[id]
		return len(rs) == 1 && rs[0].From == w.From && rs[0].To == w.To && rs[0].Amount == w.Amount
	}
	// finding fails with label and a few of list, each entry of which
	// begins with its transfer's id: the timeline draws every one the
	// harm is about. A finding that money never reached the core is not
	// about a transfer of list the core holds (one refused for good when
	// sent again, after the core took it and its answer was lost): the
	// timeline would mark it never posted, and the results count it so.
	// One whose list the core holds whole harms no money.
	finding := func(harm judging.Harm, label string, list []string) *judging.Failure {
		err := t.Fail(story, seen+"\n"+label+": "+fewOf(list), expected)
		f := err.(*judging.Failure)
		f.Harm = harm
		var held []string
		for _, entry := range list {
			id := strings.Fields(entry)[0]
			if harm == judging.NotPosted && postedRight(id) {
				held = append(held, id)
				continue
			}
			f.Refs = append(f.Refs, id)
		}
		if len(f.Refs) == 0 {
			f.Harm, f.Refs = "", held
		}
		return f
	}
	switch {
	case len(twice) > 0:
		return finding(judging.PostedTwice, "posted more than once", twice)
	case len(extra) > 0:
		return finding(judging.PostedUnexecuted, "posted, and no such transfer executed", extra)
	case len(setAside) > 0:
		return finding(judging.NotPosted, "set aside as dead letters, though each is a posting the core takes when it is sent as it should be", setAside)
	case len(markedSent) > 0:
		f := finding(judging.NotPosted, "marked sent in the outbox, and never posted: the core ledger never took them", markedSent)
		f.Why = "a row is done only once the core has said yes to it: one marked sent before that (before the send, or whatever the answer) is never sent again when the core was down, refused it for now or never answered, and nobody is told"
		return f
	case len(missing) > 0:
		return finding(judging.NotPosted, "never posted", missing)
	case len(unnamed) > 0 && pending == 0:
		return finding(judging.NotPosted, "refused by the core for good, and no dead letter names it", unnamed)
	case len(unnamed) > 0:
		// Still owed, but the core has refused it for good: sent again it
		// is refused again, so the core never hears of money that moved,
		// as surely as if the row were gone, and no dead letter says so.
		return finding(judging.NotPosted, "refused by the core for good, and still owed: the relay sends it again on every pass and the core refuses it every time, so it never succeeds, and with no dead letter nobody is told", unnamed)
	case len(misanswered) > 0:
		return finding("", "set aside with another answer than the core's: the person who looks at a dead letter finds its cause in the core's status and body, as they came", misanswered)
	case len(deadSent) > 0:
		return finding("", "set aside as dead letters and marked sent as well, though the core never took them (an operator who sends one again by clearing its dead_at by hand finds it sent, and it is never posted; the lab's POST /lab/outbox/redrive clears both)", deadSent)
	case len(wrong) > 0:
		return finding(judging.NotPosted, "posted wrong", wrong)
	case len(deadHeld) > 0:
		// The books agree: the core holds each posting once. The harm is
		// to come, from the person the dead letter sends to settle it.
		f := finding("", "set aside as dead letters, though the core holds each one's posting: a dead letter says the core never took it", deadHeld)
		f.Why = "a dead letter sends a person to settle by hand a posting the core never took: one set aside though the core acknowledged it (a whole batch set aside for the one poison in it, say) is a false dead letter, and the operator who compensates it reverses a transfer the core holds; only the core's refusal of a posting for good makes it a dead letter"
		return f
	case pending > 0:
		return t.Fail(story, seen, expected)
	}
	return nil
}

// answerText is a status and body as a failure shows them.
func answerText(status int, body string) string {
	if body == "" {
		return fmt.Sprintf("%d with no body", status)
	}
	return fmt.Sprintf("%d %s", status, body)
}

// fewShown is how many transfers a finding of delivered names: the
// count says how many there are, and a few are enough to look up.
const fewShown = 3

// fewOf lists the first fewShown of list and says how many more there
// are: a report of 26 dead letters, each with the core's answer, would
// bury the finding it backs.
func fewOf(list []string) string {
	if len(list) <= fewShown {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(list[:fewShown], ", "), len(list)-fewShown)
}

// coreHoldsAll reports whether the core holds a posting of every
// transfer of want.
func (t *T) coreHoldsAll(want owed) (bool, error) {
	ps, err := t.Postings()
	if err != nil {
		return false, err
	}
	return postedOf(ps, want) == len(want), nil
}

// outboxRows counts the outbox's rows, sent or not: none after a transfer
// committed means it was never written, and there is nothing to wait for.
func (t *T) outboxRows() (int64, error) {
	st, err := t.State()
	if err != nil {
		return 0, err
	}
	return st.Outbox.Pending + st.Outbox.Sent, nil
}

// postingsSeen says what the core and the outbox held at the end.
func postingsSeen(ps []core.Receipt, pending, dead int64) string {
	posted := counted(len(ps), "posting", "postings")
	letters := counted(int(dead), "dead letter", "dead letters")
	if pending == 0 {
		return fmt.Sprintf("%s in the core ledger; no row left owed in the outbox; %s", posted, letters)
	}
	return fmt.Sprintf("%s in the core ledger; %s still owed in the outbox %v later; %s", posted, counted(int(pending), "row", "rows"), drainWithin, letters)
}

// counted says how many of a thing, "1 row" or "3 rows".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func keysOf(rs []core.Receipt) string {
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = r.Key
	}
	return strings.Join(keys, ", ")
}

// checkPostedOnce catches a stage that never tells the core (solution 8),
// tells it twice, tells it of a transfer that was refused, or tells it
// only of what leaves a customer: one transfer goes between two of A's
// own accounts, whose books the core keeps as it keeps every account's.
func checkPostedOnce(t *T) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	var story []string
	want, err := t.payments(s, 3+t.rng.IntN(4), &story)
	if err != nil {
		return err
	}
	if err := t.pay(s, want, s.A, s.A.Accounts[0], s.A.Accounts[1], t.Amount(1_000, 50_000), t.Key(), &story); err != nil {
		return err
	}
	// Refused: more than the account holds.
	op := t.Op()
	s.Books.Expect(op)
	req := Transfer(s.A, t.Key(), TransferBody(s.A.Accounts[1], s.B.Accounts[0], 2_000_000, op))
	r := t.Do(req)
	story = append(story, req.String()+"  →  "+r.Short())
	if !r.Is(http.StatusUnprocessableEntity, pInsufficient) {
		return t.Fail(strings.Join(story, "\n"), r.String(), "422 "+pInsufficient)
	}
	// Refused: an invoice paid already, under a new key.
	ref := t.reference()
	for i := range 2 {
		op := t.Op()
		s.Books.Expect(op)
		amount := t.Amount(1_000, 50_000)
		req := Transfer(s.A, t.Key(), ReferencedBody(s.A.Accounts[0], s.B.Accounts[1], amount, op, ref))
		r := t.Do(req)
		story = append(story, req.String()+"  →  "+r.Short())
		if i == 0 {
			const executes = "201 Created: the invoice's first payment executes"
			if !toldRan(r, op) || resourceID(r) == "" {
				return t.Fail(strings.Join(story, "\n"), r.String(), executes)
			}
			// Told that it ran in another 2xx naming op and its
			// transfer: a contract difference, its posting judged.
			if !r.Is(201, "") {
				t.Differ(strings.Join(story, "\n"), r.String(), executes)
			}
			s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[1], amount)
			want[resourceID(r)] = core.Posting{TransferID: resourceID(r), From: s.A.Accounts[0], To: s.B.Accounts[1], Amount: amount}
		}
	}
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// checkCoreDown catches a stage that calls the core in the request, one
// whose relay gives up (after so many tries, or once a row has waited so
// long: the lab clock moves on more than a month while the core is down,
// longer than a queue keeps a message, 4 days by default and 14 at most
// on the common ones, and than a month a relay might wait), and one that
// marks a row sent before the core acknowledged it. The lab clock is first set back by weeks, behind the
// machine's clock: a relay that reads a row's age from the machine's
// clock against its created_at (on the lab clock) finds every row weeks
// old from the start, and gives it up on its first pass, where a lab
// clock ahead of the machine's would make it never give up.
func checkCoreDown(t *T) error {
	s, up, err := t.coreDownScenario(1_000_000)
	if err != nil {
		return err
	}
	defer up()
	now, err := t.LabNow()
	if err != nil {
		return err
	}
	backDays := 15 + t.rng.IntN(31)
	back := time.Duration(backDays) * 24 * time.Hour
	if err := t.SetClock(now.Add(-back)); err != nil {
		return err
	}
	// More than a month: a relay that gives a row up after a month, the
	// longest time to live a queue's settings commonly offer, or after
	// any shorter one, is caught whatever the seed; a move of 15 to 45
	// days caught one of a month on some seeds only.
	days := 31 + t.rng.IntN(31)
	outage := time.Duration(days) * 24 * time.Hour
	var moved error
	comeBack := func() {
		moved = t.Advance(outage)
		up()
	}
	set := fmt.Sprintf("(POST /lab/clock: the lab clock set back %d days, to %s, behind the machine's clock) the core ledger is down", backDays, clock.Format(now.Add(-back)))
	err = t.throughRefusals(s, []string{set}, comeBack, outageRefusals, "postings while down",
		fmt.Sprintf("comes back after an outage of %d days on the lab clock (POST /lab/clock: moved on %d days while it was down)", days, days))
	if moved != nil {
		return moved
	}
	return err
}

// Constants of S9.long-outage: how long the core stays down once the
// relay's first try was refused, and how soon after its return every
// posting owed must be in it; and for how many tries of each owed row at
// least, so that a relay that sets a row aside after a hundred tries for
// now, as many as a queue's dead-letter policy allows at most, makes dead
// letters of postings the core takes once it is back, whatever the
// machine's speed. A relay that sends every owed row on each
// pass (every 20 ms while the core refuses) needs a pass or two; one that
// waits between tries of a row passes while its longest wait stays under
// the bound, and fails when the wait grows to half the outage or more, as
// a doubling one without a cap does.
const (
	longOutage = 4 * time.Second
	backWithin = 2 * time.Second
	// outageTries is how many tries of each owed row (or passes of the
	// kit's) the outage lasts at least, past longOutage if the machine
	// is slow: more than the hundred a queue's dead-letter policy allows
	// at most. outageAtMost bounds the outage for a relay that reaches
	// neither, as one whose pass stalls does.
	outageTries  = 150
	outageAtMost = 12 * time.Second
)

// checkLongOutage catches a relay whose waits between tries of a row
// grow without a cap: the core stays down longOutage after the relay's
// first refused try (and for outageTries of each row, or as many
// passes, if the machine is slow), and comes back right after a try it
// refused, so that the row's next try is due as long after as the wait
// that try began; every posting must then reach the core within
// backWithin. A relay that has nothing owed by then (it marked or set
// its rows aside) is judged by postedOnce, which names what it lost. It
// catches too a pass that returns rows it did not settle, by counts:
// what the passes said they settled during the outage (GET
// /lab/outbox's relay_settled) against the outbox's sent and dead rows,
// which do not move while the core refuses everything; and, by the
// core's refusals against the kit's passes (and their rate), a relay
// that sends again and again inside its pass.
func checkLongOutage(t *T) error {
	s, up, err := t.coreDownScenario(1_000_000)
	if err != nil {
		return err
	}
	defer up()
	story := []string{"the core ledger is down"}
	want, err := t.payments(s, 2+t.rng.IntN(3), &story)
	if err != nil {
		return err
	}
	rows, err := t.outboxRows()
	if err != nil {
		return err
	}
	if rows == 0 {
		up()
		return t.postedOnce(strings.Join(append(story, "the outbox holds no row for these transfers; the core comes back"), "\n"), s, want)
	}
	faults := &t.Core().Faults
	tried, err := t.WaitFor(drainWithin, func() (bool, error) { return faults.Refused() > 0, nil })
	if err != nil {
		return err
	}
	if !tried {
		up()
		story = append(story, fmt.Sprintf("the relay tried none of them in %v; the core comes back", drainWithin))
		return t.postedOnce(strings.Join(story, "\n"), s, want)
	}
	first, atFirst := time.Now(), faults.Refused()
	// What the relay's passes say they settled, against what the outbox
	// shows: read at both ends of the outage, while the core refuses
	// every posting.
	from, err := t.Lab().Outbox(t.ctx)
	if err != nil {
		return err
	}
	select {
	case <-time.After(longOutage):
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
	// And for outageTries of each owed row, or as many of the kit's
	// passes: counted, so that a busy machine's slower passes lengthen
	// the outage, and a relay that gives a row up after a hundred tries
	// meets the core down past its limit whatever the machine's speed.
	// A relay that waits between tries of a row still runs the kit's
	// passes; one whose pass never returns tries its rows inside it.
	var to labctl.Outbox
	if _, err := judging.WaitFor(t.ctx, outageAtMost-longOutage, server.RelayInterval, func() (bool, error) {
		var err error
		if to, err = t.Lab().Outbox(t.ctx); err != nil {
			return false, err
		}
		return faults.Refused()-atFirst >= outageTries*int(rows) || to.RelayPasses-from.RelayPasses >= outageTries, nil
	}); err != nil {
		return err
	}
	outage := time.Since(first)
	// Back right after a try: the wait that try began is the whole wait
	// ahead of the row.
	// A relay that owes nothing any more (its rows marked sent or set
	// aside) will not try: no wait for it, and postedOnce names what
	// became of them.
	before, owesNothing := faults.Refused(), false
	knocks := before - atFirst
	tried, err = t.WaitFor(drainWithin, func() (bool, error) {
		if faults.Refused() > before {
			return true, nil
		}
		st, err := t.State()
		owesNothing = err == nil && st.Outbox.Pending == 0
		return owesNothing, err
	})
	if err != nil {
		return err
	}
	up()
	down := time.Since(first).Round(100 * time.Millisecond)
	switch {
	case owesNothing && faults.Refused() == before:
		story = append(story, fmt.Sprintf("the core refuses every try of the relay (%d refusals); %v after the first, the outbox owes it nothing, though it took none of them; the core comes back", faults.Refused(), outage.Round(100*time.Millisecond)))
	case tried:
		story = append(story, fmt.Sprintf("the core refuses every try of the relay for %v after its first (%d refusals), then comes back right after a try it refused", down, faults.Refused()))
	default:
		story = append(story, fmt.Sprintf("the core refuses every try of the relay (%d refusals); after %v the relay tries nothing more for %v, and the core comes back", faults.Refused(), outage.Round(100*time.Millisecond), drainWithin))
	}
	in, err := t.WaitFor(backWithin, func() (bool, error) { return t.coreHoldsAll(want) })
	if err != nil {
		return err
	}
	st, err := t.State()
	if err != nil {
		return err
	}
	if !in && st.Outbox.Pending > 0 {
		ps, err := t.Postings()
		if err != nil {
			return err
		}
		return t.Fail(strings.Join(story, "\n"), fmt.Sprintf("%v after the core came back, it held %d of the %d transfers' postings; still owed in the outbox: %d", backWithin, postedOf(ps, want), len(want), st.Outbox.Pending),
			fmt.Sprintf("each transfer posted within %v of the core's return: an outage is over when the core is back, however long it lasted", backWithin))
	}
	if err := t.postedOnce(strings.Join(story, "\n"), s, want); err != nil {
		return err
	}
	// While the core refused every posting, a pass could settle a row
	// only by marking it sent or setting it aside; with neither count
	// moved, rows the passes said they settled are rows they did not.
	// The kit runs the next pass at once after such a pass: judged by
	// counts, whatever the machine's speed.
	passes, said := to.RelayPasses-from.RelayPasses, to.RelaySettled-from.RelaySettled
	if said > 0 && to.Counts.Sent == from.Counts.Sent && to.Counts.Dead == from.Counts.Dead {
		return t.Fail(strings.Join(story, "\n"), fmt.Sprintf("in the %v of the outage, the relay ran %d passes, which said they settled %d rows between them (GET /lab/outbox: relay_settled %d, then %d), while the outbox marked no row sent and set none aside (sent %d, dead %d, both times) and the core refused %d postings",
			outage.Round(100*time.Millisecond), passes, said, from.RelaySettled, to.RelaySettled, to.Counts.Sent, to.Counts.Dead, knocks),
			fmt.Sprintf("a pass returns how many rows it settled, marked sent or set aside, not how many it read or sent: the kit runs the next pass at once after one that says it settled rows, %v after one that settled none, so a pass that counts rows it did not settle knocks without pause on a core that is down", server.RelayInterval))
	}
	// Whatever the passes say, a relay that sends again and again inside
	// its pass knocks without pause on a core that is down. Judged by
	// counts first: a pass sends each owed row once (twice, when the core
	// took some of its batch), so tries of a row many times the kit's
	// passes (two more for the passes under way at either end) were sent
	// inside a pass, however slow the machine made each; and by the rate,
	// so that a relay that waits inside its pass, less often than the
	// kit's cadence would send, is not said to knock.
	perSecond := float64(knocks) / outage.Seconds()
	if knocks > hammering*int(rows)*int(passes+2) && perSecond > float64(int(rows)*passesPerSecond) {
		return t.Fail(strings.Join(story, "\n"), fmt.Sprintf("in the %v of the outage, the core refused %d postings of the %d rows owed, %.0f a second, while the kit ran %d relay passes (GET /lab/outbox: relay_passes %d, then %d)",
			outage.Round(100*time.Millisecond), knocks, rows, perSecond, passes, from.RelayPasses, to.RelayPasses),
			fmt.Sprintf("each owed row tried at most %d times for each pass the kit ran, or no more often than the kit's cadence (%d passes a second), and far fewer would do: the kit runs the next pass %v after one that settled nothing, and at once only after one that settled rows, as the count a pass returns says; a relay that sends a row again inside its pass knocks without pause on a core that is down",
				hammering, passesPerSecond, server.RelayInterval))
	}
	return nil
}

// passesPerSecond is how many relay passes the kit runs in a second
// while they settle nothing (server.RelayInterval apart); hammering is
// how many tries of each owed row for each pass the kit ran S9.long-outage
// tolerates during its outage, when they also come more often than the
// cadence, before it says the relay knocks without pause. The reference
// solution's relay tries each row once a pass, 35 to 41 times a second
// on two busy cores; one that sends its batch again inside its pass
// (retry-inside-the-pass) ran no pass and tried each row 350 to 2,800
// times a second on two cores under a load average of 17 to 25.
const (
	passesPerSecond = int(time.Second / server.RelayInterval)
	hammering       = 5
)

// timesOver says how many times the core refused a posting, and over
// how many tries of the relay's: one, or many passes.
func timesOver(n int) string {
	if n == 1 {
		return "once (one try of the relay's)"
	}
	return fmt.Sprintf("%d times (as many tries of the relay's)", n)
}

// postedOf counts the transfers of want that ps posts.
func postedOf(ps []core.Receipt, want owed) int {
	in := map[string]bool{}
	for _, p := range ps {
		if _, ok := want[p.TransferID]; ok {
			in[p.TransferID] = true
		}
	}
	return len(in)
}

// checkTokenRotated catches a relay that takes a refusal of its caller
// (401: a token the core no longer knows; 403: one it knows and does not
// let post yet) for a refusal of the posting: while the core refuses the
// token, every posting request of every pass is refused, 401 and 403 in
// turn, and a relay that sets such postings aside as dead letters (on
// either status: by the status alone, or by a list of its own of the
// statuses that mean later, with the 401 and without the 403) leaves
// them there once the token is mended.
func checkTokenRotated(t *T) error {
	return t.whileRefused((*core.Faults).RefuseToken,
		"the core ledger refuses the relay's token (a rotation rolled out to some of its instances, not yet to others, nor mended on the relay's side): 401 and 403 in turn to every posting request",
		"posting requests under the old token", "takes the mended token")
}

// checkBatchCutShort catches a relay that takes a batch refused whole for
// a refusal of each posting in it: while every batch request arrives cut
// short, the core answers each 400 invalid-batch, a status that, for a
// posting of its own, would be for good. A relay that reads the status
// alone, and not whose refusal it is, sets aside postings the core takes
// as they are once the bodies arrive whole.
func checkBatchCutShort(t *T) error {
	return t.whileRefused((*core.Faults).CutBatches,
		"a proxy between the relay and the core ledger cuts every batch request short: the core refuses each whole, 400 "+core.InvalidBatch.URI()+", and posts none of it",
		"batch requests cut short", "gets whole bodies again")
}

// whileRefused makes a few transfers while fault(faults, true) has the
// core refuse the relay's requests (not its postings), through
// throughRefusals, and ends the refusal with fault(faults, false).
func (t *T) whileRefused(fault func(*core.Faults, bool), story, refusing, ends string) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	faults := &t.Core().Faults
	fault(faults, true)
	end := func() { fault(faults, false) }
	defer end()
	return t.throughRefusals(s, []string{story}, end, tokenRefusals, refusing, ends)
}

// checkOneInProgress catches a relay that takes a 409 from the core for
// a posting already made, one that stops its pass at the first refusal
// for now (the rows the core took beside it are never marked, and sent
// again on every pass), one that sends its batch again inside its pass
// until the core says yes (the rows taken beside it are not marked while
// the 409s last), and one that sets a row aside after so many refusals
// for now: the core answers one transfer's posting 409, its key still in
// progress there, pass after pass, and takes the others.
func checkOneInProgress(t *T) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	faults := &t.Core().Faults
	faults.InProgressNext()
	defer faults.EndInProgress()
	story := []string{"the core ledger answers the first transfer's posting 409 " + problem.RequestInProgress.URI() + " (a request under its key still running there), and posts the others"}
	want, err := t.payments(s, 4+t.rng.IntN(3), &story)
	if err != nil {
		return err
	}
	rows, err := t.outboxRows()
	if err != nil {
		return err
	}
	var st labctl.State
	if rows > 0 {
		// Until the core has answered it 409 many times (many passes),
		// or, once it has answered it once, until the relay has nothing
		// left owed (it took the 409 for a yes, or gave the row up).
		if _, err := t.WaitFor(drainWithin, func() (bool, error) {
			n := faults.Refused()
			if n == 0 {
				return false, nil
			}
			var err error
			if st, err = t.State(); err != nil {
				return false, err
			}
			return n >= inProgressRefusals || st.Outbox.Pending == 0, nil
		}); err != nil {
			return err
		}
	}
	held, refused := faults.InProgress(), faults.Refused()
	switch {
	case rows == 0:
		story = append(story, "the outbox holds no row for these transfers; then the core lets the first through")
	case refused == 0:
		story = append(story, fmt.Sprintf("the relay sent the core nothing in %v; then the core lets the first posting through", drainWithin))
	case st.Outbox.Pending > 0 && st.Outbox.Sent < int64(len(want)-1):
		story = append(story, fmt.Sprintf("the core answers %s 409 %s", held, timesOver(refused)))
		ps, err := t.Postings()
		if err != nil {
			return err
		}
		got := fmt.Sprintf("%d of the other %d transfers' rows marked sent by then, %s still owed", st.Outbox.Sent, len(want)-1, counted(int(st.Outbox.Pending), "row", "rows"))
		if held := st.Outbox.Pending + st.Outbox.Sent + st.Outbox.Dead; held < rows {
			got += fmt.Sprintf("; %s of the %d the transfers wrote gone from the outbox", counted(int(rows-held), "row", "rows"), rows)
		}
		got += "; the core ledger holds " + counted(len(ps), "posting", "postings")
		return t.Fail(strings.Join(story, "\n"), got,
			"the rows the core took marked sent, and kept, while one is refused for now: one posting refused for now holds back none of the others")
	default:
		story = append(story, fmt.Sprintf("the core answers %s 409 %s, then lets it through", held, timesOver(refused)))
	}
	faults.EndInProgress()
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// inProgressRefusals is how many 409s the core answers in
// S9.one-in-progress before it lets the transfer through: a relay sends a
// row refused for now twice a pass at most (PostAll sends it once more),
// so at least 50 passes.
const inProgressRefusals = 100

// throughRefusals makes a few transfers while the core refuses what the
// relay sends, waits until the core has refused enough (many relay
// passes, if the outbox holds anything to send), ends the refusal and
// checks that each transfer is posted once. refusing names what the core
// refused, and ends how the refusal ended, for the story.
func (t *T) throughRefusals(s Scenario, story []string, end func(), enough int, refusing, ends string) error {
	faults := &t.Core().Faults
	want, err := t.payments(s, 3+t.rng.IntN(3), &story)
	if err != nil {
		return err
	}
	rows, err := t.outboxRows()
	if err != nil {
		return err
	}
	tried, owed, untouched := false, true, false
	if rows > 0 {
		// Until the core has refused enough, or, once it has refused the
		// relay something, the relay has nothing left owed (it gave every
		// row up), which a relay that keeps them owed never reaches while
		// the refusal lasts. Not before the first refusal: a relay that
		// marks its rows before it sends them has none owed, and must
		// meet the refusal, not a core that is back.
		if tried, err = t.WaitFor(drainWithin, func() (bool, error) {
			switch n := faults.Refused(); {
			case n >= enough:
				return true, nil
			case n == 0:
				// Nothing refused yet; but a relay whose requests the
				// refusal does not touch (one that sends no batches,
				// for one that cuts batches) may have delivered all.
				untouched, err = t.coreHoldsAll(want)
				return untouched, err
			}
			st, err := t.State()
			owed = err == nil && st.Outbox.Pending > 0
			return !owed, err
		}); err != nil {
			return err
		}
	}
	refused := faults.Refused()
	switch {
	case rows == 0:
		story = append(story, "the outbox holds no row for these transfers; the core "+ends)
	case untouched:
		story = append(story, "the core took every posting and refused the relay nothing: none of its requests was of those refused; then the core "+ends)
	case refused >= enough:
		story = append(story, fmt.Sprintf("the core refuses %d %s (many relay passes), then %s", refused, refusing, ends))
	case tried && !owed:
		story = append(story, fmt.Sprintf("the relay stopped sending after the core refused %d of its %s: nothing was left owed; then the core %s", refused, refusing, ends))
	default:
		story = append(story, fmt.Sprintf("the core refused %d of the %s in %v, not %d; then it %s", refused, refusing, drainWithin, enough, ends))
	}
	end()
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// tokenRefusals is how many posting requests the core refuses in
// S9.token-rotated before the token is mended, and in S9.batch-cut-short
// before the bodies arrive whole: a request a pass, so several passes.
const tokenRefusals = 10

// outageRefusals is how many postings the core refuses before it comes
// back in S9.core-down: a relay sends a row at most once a pass, so the
// outage lasts at least that many passes divided by the rows owed, many
// more than a relay that gives up after a few tries would make.
const outageRefusals = 40

// checkCoreFlaps catches a relay that marks a row sent on an answer it
// did not get, gives a row up after a refusal (or after one it takes for
// good, a 500, a 429 or a 404, say), or marks a batch sent whole once the
// core took part of it. The transfers are made while the
// core is down, so that it comes back flapping to one batch of them all:
// of a batch, it takes every other posting and refuses the rest for now,
// and refuses some of those again when they are sent once more.
func checkCoreFlaps(t *T) error {
	// Each "not now" a core, or a deploy or a proxy before it, may
	// answer, in an order of the seed's. The flapping core refuses a
	// posting before each it takes, so a relay that gets them all through
	// meets one refusal a transfer: at least as many transfers as
	// answers, so that each is given.
	notNow := []*problem.Type{core.Down, core.Failed, core.BadGateway, core.GatewayTimeout, core.TooMany, core.TooSlow,
		core.RouteMissing, core.PostNotAllowed, core.MediaTypeLost}
	t.rng.Shuffle(len(notNow), func(i, j int) { notNow[i], notNow[j] = notNow[j], notNow[i] })
	s, up, err := t.coreDownScenario(1_000_000)
	if err != nil {
		return err
	}
	defer up()
	n := len(notNow) + t.rng.IntN(4)
	story := []string{"the core ledger is down"}
	want, err := t.payments(s, n, &story)
	if err != nil {
		return err
	}
	var statuses []string
	for _, p := range notNow {
		statuses = append(statuses, strconv.Itoa(p.Status))
	}
	t.Core().Faults.Flap(4*n, notNow...)
	up()
	story = append(story, fmt.Sprintf("the core ledger comes back flapping: of its next %d postings it refuses one for now, takes the next, refuses the next…, the refusals answered %s in turn", 4*n, strings.Join(statuses, ", ")))
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// sameInstant is how many more equal transfers S9.same-content makes in
// a try, the lab clock set back to one instant before each. Each row is
// written some milliseconds after that instant, one after the other over
// HTTP: the check reads the rows' instants and counts on two sharing a
// millisecond; a loaded machine may give each its own, and the check
// then tries again, sameInstantTries times in all.
const sameInstant = 32

// sameInstantTries is how many tries S9.same-content makes before it
// says it could not observe two rows written in one millisecond.
const sameInstantTries = 3

// checkSameContent catches a core key made from what the posting says:
// two transfers with the same accounts and amount would share it; and one
// made from what it says and when its row was written: two can be
// written in the same millisecond, and the check sees that two were.
func checkSameContent(t *T) error {
	s, err := t.coreScenario(int64(2+sameInstantTries*sameInstant) * 50_000)
	if err != nil {
		return err
	}
	story := []string{"the same rent, twice: the same accounts and amount, each under a key of its own"}
	want := owed{}
	from, to, amount := s.A.Accounts[0], s.B.Accounts[0], t.Amount(1_000, 50_000)
	for range 2 {
		if err := t.pay(s, want, s.A, from, to, amount, t.Key(), &story); err != nil {
			return err
		}
	}
	// Made one after the other, two rents are written a millisecond or
	// more apart, and a key of the content and the time tells them apart
	// most of the time. Two written in the same millisecond are the rule
	// it breaks: the lab clock brings the instant back before each, and
	// the outbox rows' instants say whether two shared one.
	for try := 1; ; try++ {
		at, err := t.LabNow()
		if err != nil {
			return err
		}
		story = append(story, fmt.Sprintf("then the same rent %d× more, one after the other, the lab clock set back to %s before each, as a clock stepped back would be:",
			sameInstant, at.Format("15:04:05.000")))
		first := len(story)
		earlier := maps.Clone(want)
		for range sameInstant {
			if err := t.SetClock(at); err != nil {
				return err
			}
			if err := t.pay(s, want, s.A, from, to, amount, t.Key(), &story); err != nil {
				return err
			}
		}
		story = append(story[:first+1], fmt.Sprintf("… and %d more like it", sameInstant-1))
		if err := t.postedOnce(strings.Join(story, "\n"), s, want); err != nil {
			return err
		}
		var made []string
		for id := range want {
			if _, ok := earlier[id]; !ok {
				made = append(made, id)
			}
		}
		written, err := t.outboxInstants(made)
		if err != nil {
			return err
		}
		if written < sameInstant {
			return nil
		}
		story = append(story, fmt.Sprintf("(the %d rows were written in %d different milliseconds: no two shared one)", sameInstant, written))
		if try == sameInstantTries {
			return t.CouldNotObserve("two equal rents written in one millisecond: %d times, each of %d rents made one after the other, the lab clock set back before each, had its outbox row written in a millisecond of its own (a slow machine), so whether the core key tells them apart by more than the time is unknown", sameInstantTries, sameInstant)
		}
	}
}

// outboxInstants counts the milliseconds in which the outbox rows of the
// transfers ids were written (their created_at, GET /lab/transfers): as
// many as ids when no two shared one. A created_at the lab cannot read as
// an instant is one with every other written the same way; a transfer
// without an outbox row counts as one of its own.
func (t *T) outboxInstants(ids []string) (int, error) {
	listed, err := t.transfersListed(ids)
	if err != nil {
		return 0, err
	}
	instants := map[string]bool{}
	for _, id := range ids {
		at := id
		if x, ok := listed[id]; ok {
			if w, err := time.Parse(time.RFC3339Nano, x.OutboxAt); err == nil {
				at = w.UTC().Truncate(time.Millisecond).String()
			} else if x.OutboxAt != "" {
				at = "as written: " + x.OutboxAt
			}
		}
		instants[at] = true
	}
	return len(instants), nil
}

// transfersListed reads the executed transfers ids as the lab lists them
// (GET /lab/transfers), with their outbox rows' created_at and sent_at;
// an id the lab does not list is not in the map.
func (t *T) transfersListed(ids []string) (map[string]bank.Executed, error) {
	wanted := map[string]bool{}
	for _, id := range ids {
		wanted[id] = true
	}
	listed := map[string]bank.Executed{}
	for after := ""; ; {
		page, err := t.Lab().TransferOps(t.ctx, after, bank.MaxListed)
		if err != nil {
			return nil, err
		}
		for _, x := range page {
			if wanted[x.ID] {
				listed[x.ID] = x
			}
		}
		if len(page) < bank.MaxListed {
			return listed, nil
		}
		after = page[len(page)-1].ID
	}
}

// checkSharedClientKey catches the client's Idempotency-Key used as the
// core key, and the invoice's reference: each is unique only per
// customer, and the two customers' transfers share both. Then the lab is
// reset, the core keeping its postings, and as many transfers again must
// each be posted: a key made from the outbox row's id is unique only while
// the rows are kept, and on SQLite the ids begin again at 1.
func checkSharedClientKey(t *T) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	key, ref := fmt.Sprintf("pay-%d", 1+t.rng.IntN(9)), t.reference()
	story := []string{fmt.Sprintf("two customers, each with a transfer under the same key string %q, paying an invoice of the same reference %q", key, ref)}
	want := owed{}
	first := t.Amount(1_000, 50_000)
	if err := t.payRef(s, want, s.A, s.A.Accounts[0], s.B.Accounts[0], first, key, ref, &story); err != nil {
		return err
	}
	if err := t.payRef(s, want, s.B, s.B.Accounts[1], s.A.Accounts[1], t.Amount(1_000, 50_000), key, ref, &story); err != nil {
		return err
	}
	// The same customer's key again, once its retention is over (stage
	// 5): a new request, a new transfer, a new posting. The two postings
	// delivered first: hours of lab time are not for the relay to cross.
	if _, err := t.Drained(drainWithin); err != nil {
		return err
	}
	retention := time.Duration(2+t.rng.IntN(10)) * time.Hour
	if err := t.Configure(labclient.Config{Retention: retention}); err != nil {
		return err
	}
	if err := t.Advance(retention + time.Minute); err != nil {
		return err
	}
	story = append(story, fmt.Sprintf("(POST /lab/config: retention %v; then %v of lab time: %q has expired) and the first customer uses it again, for another amount", retention, retention+time.Minute, key))
	if err := t.pay(s, want, s.A, s.A.Accounts[0], s.B.Accounts[0], first+1+t.rng.Int64N(1_000), key, &story); err != nil {
		return err
	}
	if err := t.postedOnce(strings.Join(story, "\n"), s, want); err != nil {
		return err
	}
	// A lab reset empties the outbox, and the core keeps its postings, as
	// a restore from a backup or an outbox that deletes its sent rows
	// would: a key made from the row's id (on SQLite, one past the highest
	// id still there) comes round again, and the core refuses the new
	// posting as the old key reused.
	posted := len(want)
	if s, err = t.coreScenario(1_000_000); err != nil {
		return err
	}
	story = append(story, fmt.Sprintf("(POST /lab/reset: the outbox emptied, the core ledger keeping its %d postings) then %d transfers, each under a fresh key", posted, posted))
	for range posted {
		if err := t.pay(s, want, s.A, s.A.Accounts[0], s.B.Accounts[0], t.Amount(1_000, 50_000), t.Key(), &story); err != nil {
			return err
		}
	}
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// checkTwoServersPost catches a core key kept unique by one process's
// memory: a number counted on, in the process, from the highest the
// outbox held when it started. Its numbers never repeat while one
// process writes rows, across its restarts too; two processes on one
// database count the same numbers, and the core refuses the second
// posting under each as the first's key reused. The server runs as two
// processes on one database, each with its relay, and the transfers go
// through the first and the second in turn.
func checkTwoServersPost(t *T) error {
	const n = 6
	if err := t.watchesCore(); err != nil {
		return err
	}
	rt, s, err := t.twoServers(1_000_000)
	if err != nil {
		return err
	}
	story := []string{fmt.Sprintf("two server processes on one database, each with its relay; %d transfers, each under a fresh key, through the first process and the second in turn", n)}
	want := owed{}
	for i := range n {
		to := s.B.Accounts[rt.rng.IntN(len(s.B.Accounts))]
		if err := rt.payThrough(i%2, s, want, s.A, s.A.Accounts[0], to, rt.Amount(1_000, 50_000), rt.Key(), "", &story); err != nil {
			return err
		}
	}
	return rt.postedOnce(strings.Join(story, "\n"), s, want)
}

// outboxTimesRounds is how many rounds of the relay's requests
// S9.outbox-times holds while the lab clock moves on, at most, for the
// core to post the first transfer and refuse the second: one, unless a
// pass read the first row alone, or the server gave a held call up.
const outboxTimesRounds = 4

// checkOutboxTimes catches an outbox row's times taken from the
// machine's clock (time.Now()) instead of the lab clock, when the row is
// written (created_at) or marked sent (sent_at), and a sent_at that is
// not when the core acknowledged the row (copied from created_at: every
// lag reads 0; read when the pass began, before the send: the lag leaves
// out the core's answer time); and a dead letter's time (dead_at) that is
// not when the core refused its posting for good. The lab moves its
// clock on by hours first, so that the two clocks are hours apart; then,
// with the core ledger down, two transfers write their rows, the core is
// to refuse the second's posting for good, and the core comes back but
// holds the relay's next request while the lab clock moves on again, and
// the next the same way, round after round, until the first row is
// acknowledged and the second refused: each after a move. It reads the
// first row's times (GET /lab/transfers) against the lab clock before the
// transfer was sent, just before the first move, just after the move of
// the round that acknowledged it and once the outbox had drained, and
// then the dead letter's (GET /lab/state) against the last two, the move
// that of the round that refused it.
func checkOutboxTimes(t *T) error {
	s, up, err := t.coreDownScenario(1_000_000)
	if err != nil {
		return err
	}
	defer up()
	moved := time.Duration(2+t.rng.IntN(47)) * time.Hour
	if err := t.Advance(moved); err != nil {
		return err
	}
	before, err := t.LabNow()
	if err != nil {
		return err
	}
	story := []string{fmt.Sprintf("(POST /lab/clock: the lab clock moved on %v, to %s; the core ledger is down) then two transfers", moved, clock.Format(before))}
	want := owed{}
	if err := t.payment(s, want, &story); err != nil {
		return err
	}
	id := slices.Collect(maps.Keys(want))[0]
	// A second transfer, whose posting the core will refuse for good: its
	// dead letter is set aside by the same pass, once the core refuses it.
	poison := owed{}
	if err := t.payment(s, poison, &story); err != nil {
		return err
	}
	dead := slices.Collect(maps.Keys(poison))[0]
	want[dead] = poison[dead]
	faults := &t.Core().Faults
	faults.Poison(dead)
	story = append(story, fmt.Sprintf("(the core ledger is to refuse the posting of %s, the second transfer, for good: 422 %s)", dead, core.Rejected.URI()))
	// The row is written with the transfer, before its answer.
	listed, err := t.transfersListed([]string{id})
	if err != nil {
		return err
	}
	if listed[id].OutboxAt == "" {
		// No row to time: whether the transfer reaches the core at all is
		// judged first.
		up()
		if err := t.delivered(strings.Join(story, "\n"), s, want, []string{dead}); err != nil {
			return err
		}
		return t.CouldNotObserve("when the outbox row of %s was written: GET /lab/transfers lists no created_at for it once the transfer was answered", id)
	}
	pause, err := t.LabNow()
	if err != nil {
		return err
	}
	// The core comes back slow: it holds the relay's requests while the
	// lab clock moves on, and answers them after, so that the
	// acknowledgement comes after the move, and a sent_at read before the
	// send (when the pass began) reads before it. Each round lets the
	// held requests go and holds the next: a pass that read the first row
	// alone (on a busy machine, before the second was written) is
	// answered in one round, and the pass that sends the second in a
	// later one. Each row's time is read against the round that answered
	// it. The count is read before the hold: a pass that comes between
	// the two is held, and counts as one the check waits for.
	held := faults.Held()
	faults.Hold()
	defer faults.Release()
	up()
	// moveOn moves the lab clock on by one to five hours and returns how
	// far and the lab time after the move.
	moveOn := func() (time.Duration, time.Time, error) {
		gap := time.Duration(1+t.rng.IntN(5)) * time.Hour
		if err := t.Advance(gap); err != nil {
			return 0, time.Time{}, err
		}
		now, err := t.LabNow()
		return gap, now, err
	}
	var postedIn, refusedIn time.Time
	rounds := 0
	for rounds < outboxTimesRounds && (postedIn.IsZero() || refusedIn.IsZero()) {
		waits, err := t.relayWaits(faults, held)
		if err != nil {
			return err
		}
		if !waits {
			break
		}
		rounds++
		gap, resumed, err := moveOn()
		if err != nil {
			return err
		}
		if rounds == 1 {
			story = append(story, fmt.Sprintf("(their outbox rows written while the core is down, the core ledger came back and held the relay's next request, unanswered, while the lab clock moved on %v more, to %s; then it answered)", gap, clock.Format(resumed)))
		} else {
			story = append(story, fmt.Sprintf("(the core held the relay's next request as well while the lab clock moved on %v more, to %s; then it answered)", gap, clock.Format(resumed)))
		}
		held = faults.Held()
		faults.Release()
		faults.Hold()
		// What the core did with the requests let go is read once it is
		// done with each of them (answered, whether or not the server
		// still waits for the answer): a posting it took or refused then
		// belongs to this round, whatever the relay sends meanwhile.
		if _, err := t.WaitFor(drainWithin, func() (bool, error) { return faults.Left() >= held, nil }); err != nil {
			return err
		}
		posted, refused, err := t.answeredAtCore(id, dead)
		if err != nil {
			return err
		}
		if posted && postedIn.IsZero() {
			postedIn = resumed
		}
		if refused && refusedIn.IsZero() {
			refusedIn = resumed
		}
	}
	faults.Release()
	if rounds == 0 {
		gap, resumed, err := moveOn()
		if err != nil {
			return err
		}
		story = append(story, fmt.Sprintf("(their outbox rows written while the core is down, the core ledger came back; the relay sent it nothing in %v, and the lab clock moved on %v more, to %s)", drainWithin, gap, clock.Format(resumed)))
	}
	if err := t.delivered(strings.Join(story, "\n"), s, want, []string{dead}); err != nil {
		return err
	}
	after, err := t.LabNow()
	if err != nil {
		return err
	}
	listed, err = t.transfersListed([]string{id})
	if err != nil {
		return err
	}
	x := listed[id]
	if x.OutboxAt == "" || x.OutboxSentAt == "" {
		return t.CouldNotObserve("when the outbox row of %s was written and sent: GET /lab/transfers lists its created_at as %q and its sent_at as %q", id, x.OutboxAt, x.OutboxSentAt)
	}
	created, errC := time.Parse(time.RFC3339Nano, x.OutboxAt)
	sent, errS := time.Parse(time.RFC3339Nano, x.OutboxSentAt)
	// A row the core did not post while it held the relay's requests was
	// acknowledged once the core was back, after its row was written.
	acked := postedIn
	if acked.IsZero() {
		acked = pause
	}
	if errC == nil && errS == nil && !created.Before(before) && !pause.Before(created) && !sent.Before(acked) && !after.Before(sent) {
		if refusedIn.IsZero() {
			return t.CouldNotObserve("when the posting of %s was set aside: in %d round(s) of the relay's requests held while the lab clock moved on, the core did not refuse it", dead, rounds)
		}
		return t.deadLetterTime(story, dead, refusedIn, after)
	}
	story = append(story, fmt.Sprintf("(the lab clock read %s before the transfer was sent, %s once its row was written, %s once the clock had moved on and %s once the outbox had drained)",
		clock.Format(before), clock.Format(pause), clock.Format(acked), clock.Format(after)))
	got := fmt.Sprintf("%s's outbox row: created_at %s, sent_at %s", id, x.OutboxAt, x.OutboxSentAt)
	if errC == nil && errS == nil {
		got += fmt.Sprintf(" (a delivery lag of %v, where the lab clock says the core acknowledged the row at least %v after it was written)", sent.Sub(created), acked.Sub(pause))
	} else {
		got += " (not both RFC 3339 instants, as the lab clock writes them)"
	}
	f := t.Fail(strings.Join(story, "\n"), got,
		fmt.Sprintf("created_at and sent_at RFC 3339 instants on the lab clock: %s ≤ created_at ≤ %s, the row's writing, and %s ≤ sent_at ≤ %s, the core's acknowledgement", clock.Format(before), clock.Format(pause), clock.Format(acked), clock.Format(after))).(*judging.Failure)
	f.Why = "the outbox's times are read on the lab clock, as every other time of the server: the delivery lag (sent_at less created_at) the lab, the dashboard and make delivery-check report, and an instructor's timeline once the lab clock was moved; a time from the machine's clock (time.Now()) reads as hours before the transfer was made, and the lag is off by as much as the clock was moved; a sent_at that is not the acknowledgement's time hides how long the core kept the row waiting"
	return f
}

// deadLetterTime checks, for S9.outbox-times, that the dead letter of
// transfer id was set aside on the lab clock once the core had refused it:
// between resumed, when the lab clock had moved on while the core held
// the relay's request, and after, once the outbox had drained.
func (t *T) deadLetterTime(story []string, id string, resumed, after time.Time) error {
	st, err := t.State()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(st.DeadLetters, func(d bank.DeadLetter) bool { return d.TransferID == id })
	if i < 0 {
		return t.CouldNotObserve("when the posting of %s was set aside: GET /lab/state lists no dead letter for it", id)
	}
	at, err := time.Parse(time.RFC3339Nano, st.DeadLetters[i].At)
	if err == nil && !at.Before(resumed) && !after.Before(at) {
		return nil
	}
	story = append(story, fmt.Sprintf("(the lab clock read %s once it had moved on while the core held the relay's request, and %s once the outbox had drained)", clock.Format(resumed), clock.Format(after)))
	got := fmt.Sprintf("the dead letter of %s: set aside at %s (dead_at)", id, st.DeadLetters[i].At)
	switch {
	case err != nil:
		got += ", not an RFC 3339 instant, as the lab clock writes them"
	case at.Before(resumed):
		got += fmt.Sprintf(", %v before the lab clock moved on while the core held the request it was refused in", resumed.Sub(at))
	}
	f := t.Fail(strings.Join(story, "\n"), got,
		fmt.Sprintf("dead_at an RFC 3339 instant on the lab clock, when the core refused the posting for good: %s ≤ dead_at ≤ %s", clock.Format(resumed), clock.Format(after))).(*judging.Failure)
	f.Refs = []string{id}
	f.Why = "a dead letter's time says when the posting was given up, on the lab clock as every other time of the server: the person who settles it by hand reads it beside the transfer's and the core's times, and an instructor's timeline puts it there; one read when the pass began, before the send, says it was given up before the core had refused it, and leaves out however long the core kept the request waiting; one from the machine's clock is hours off once the lab clock was moved"
	return f
}

// coreLimit is the most a posting may move in S9.poison, the core's own
// limit (core.Faults.LimitAmount): above every payment's amount but one.
const coreLimit = 100_000

// paymentsOneOver is payments where one transfer, at random, moves more
// than coreLimit, to B's first account: it returns what they owe the core
// and that one's id.
func (t *T) paymentsOneOver(s Scenario, n int, story *[]string) (owed, string, error) {
	big, over := t.rng.IntN(n), ""
	want := owed{}
	for i := range n {
		if i != big {
			if err := t.payment(s, want, story); err != nil {
				return nil, "", err
			}
			continue
		}
		one := owed{}
		if err := t.pay(s, one, s.A, s.A.Accounts[0], s.B.Accounts[0], t.Amount(coreLimit+1, 3*coreLimit), t.Key(), story); err != nil {
			return nil, "", err
		}
		for id, p := range one {
			over, want[id] = id, p
		}
	}
	return want, over, nil
}

// checkPoison catches a relay that stops at a posting the core refuses
// for good, one that retries it for ever, one that drops it without a
// dead letter, and one that sets it aside with another answer than the
// core's. The core refuses two postings for good: the first it receives
// with 422 posting-rejected, and the one over its own limit with 400
// invalid-posting, a status a relay that takes only 422 for good keeps
// sending. Both go in one pass: the transfers are made while the core is
// down, and it comes back once the relay has met the closed door with
// passes that read them all, so that a relay that sets a pass's dead
// letters aside with one answer for all stores another's for one of them.
// Set aside, the dead letters stay there, sent no more, until a person
// acts: one more transfer goes through the relay's passes, and then the
// lab clock moves on by more than a year, past the keys' retention, a
// queue's and any a purge might keep dead letters for, which purges: a
// purge that keeps the outbox from growing by deleting the old rows the
// relay is done with, dead letters among them, once they are a day old
// or a quarter, loses their transfers without a trace.
func checkPoison(t *T) error {
	s, up, err := t.coreDownScenario(1_000_000)
	if err != nil {
		return err
	}
	defer up()
	faults := &t.Core().Faults
	faults.PoisonNext()
	faults.LimitAmount(coreLimit)
	story := []string{fmt.Sprintf("the core ledger is down while the transfers are made; once back, it rejects the first posting it receives for good (422 %s), and every posting of more than %d won (400 %s: a limit of its own, which the bank does not have)",
		core.Rejected.URI(), coreLimit, core.InvalidPosting.URI())}
	want, overLimit, err := t.paymentsOneOver(s, 4+t.rng.IntN(4), &story)
	if err != nil {
		return err
	}
	rows, err := t.outboxRows()
	if err != nil {
		return err
	}
	var forGood []string
	if rows > 0 {
		// A pass that read the outbox before the last transfer carries
		// fewer than rows postings, and there is one such pass at most:
		// once the core has refused twice rows postings, the passes since
		// read them all, and so will the first after its return. Unless
		// the relay owes nothing any more (it marked its rows, or set
		// them aside): then no pass comes.
		before := faults.Refused()
		if _, err := t.WaitFor(drainWithin, func() (bool, error) {
			if faults.Refused()-before >= 2*int(rows) {
				return true, nil
			}
			st, err := t.State()
			return err == nil && st.Outbox.Pending == 0, err
		}); err != nil {
			return err
		}
		up()
		story = append(story, fmt.Sprintf("the core refuses %d postings while down, then comes back", faults.Refused()))
		// The relay has sent something: wait for both refusals.
		refused := func() (bool, error) {
			_, ok := faults.Answer(overLimit)
			return ok && len(faults.Poisoned()) > 0, nil
		}
		if _, err := t.WaitFor(drainWithin, refused); err != nil {
			return err
		}
		forGood = append(faults.Poisoned(), overLimit)
	}
	up()
	story = append(story, fmt.Sprintf("the core refused the postings of %v for good", forGood))
	if err := t.delivered(strings.Join(story, "\n"), s, want, forGood); err != nil || len(forGood) == 0 {
		return err
	}
	// Set aside, they stay aside: the passes that deliver one more
	// transfer must not send them again.
	before := faults.PoisonedSends()
	story = append(story, "set aside as dead letters; then one more transfer")
	if err := t.payment(s, want, &story); err != nil {
		return err
	}
	if err := t.delivered(strings.Join(story, "\n"), s, want, forGood); err != nil {
		return err
	}
	if n := faults.PoisonedSends() - before; n > 0 {
		return t.Fail(strings.Join(story, "\n"), fmt.Sprintf("the relay sent the dead letters of %s to the core %d more times after it set them aside", strings.Join(forGood, " and "), n),
			"a dead letter sent no more: the core refuses it for good, and a relay that reads dead letters as owed sends them on every pass, as many as there are, and fills its batches with them")
	}
	// Nor does time deal with them: more than a year later, past the
	// keys' retention, any queue's, and any time a purge might give a
	// person to deal with a dead letter (a month, a quarter, a year; the
	// clock's move purges), a dead letter is still there until a person
	// acts. A move of weeks caught a purge of month-old dead letters on
	// some seeds only, and one of quarter-old ones on none.
	days := 366 + t.rng.IntN(365)
	if err := t.Advance(time.Duration(days) * 24 * time.Hour); err != nil {
		return err
	}
	story = append(story, fmt.Sprintf("(POST /lab/clock: moved on %d days, past the keys' retention, which purges what has expired) and nobody has dealt with the dead letters", days))
	if err := t.deadLettersKept(strings.Join(story, "\n"), forGood); err != nil {
		return err
	}
	return t.delivered(strings.Join(story, "\n"), s, want, forGood)
}

// checkRedrive catches a relay that never sends a dead letter an
// operator sent again, and one that sends it under another key than its
// row's: the core refuses two postings for good for a cause an operator
// can fix (over a limit of the core's own), and once their dead letters
// are there, the check lifts the limit and re-drives them (POST
// /lab/outbox/redrive), which makes their rows owed again, dead_at
// cleared and the core's answer kept as its last. The core never took
// the first before; it took the second, whose answer was lost, before the
// limit refused the send again (takenThenRefused). The operator first
// re-drives the first too soon, while the core still refuses it, which
// must set it aside again with the core's new answer; then lifts the
// limit and re-drives both. The relay must send both, under their keys,
// and the core post each once, and no dead letter remain. A relay that
// reads owed by the answer's columns, not by dead_at, or that remembers
// in memory the rows it set aside, never sends them; one that sets a row
// aside only while it holds no answer leaves the first owed for ever;
// one that sends a re-driven row under a new key has the core post the
// second twice.
func checkRedrive(t *T) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	faults := &t.Core().Faults
	want := owed{}
	var story []string
	taken, err := t.takenThenRefused(s, want, &story)
	if err != nil {
		return err
	}
	more, over, err := t.paymentsOneOver(s, 2+t.rng.IntN(3), &story)
	if err != nil {
		return err
	}
	maps.Copy(want, more)
	if err := t.delivered(strings.Join(story, "\n"), s, want, []string{taken, over}); err != nil {
		return err
	}
	// The operator's part: read the answers, fix their cause, send them
	// again. Once too soon: the core, asked to lift its limit, has only
	// moved it, still under the amount of over, which the core refuses
	// again, with another answer: its dead letter must come back with it.
	moved := int64(coreLimit/2 + t.rng.IntN(coreLimit/2))
	faults.LimitAmount(moved)
	refusals := faults.PoisonedSends()
	d, err := t.redrive(over, &story, fmt.Sprintf("the operator asks the core to lift its limit, which it only moves to %d won, and sends the dead letter again at once", moved))
	if err != nil {
		return err
	}
	story = append(story, fmt.Sprintf("(it was set aside with %d %s, under key %s)", d.Status, core.InvalidPosting.URI(), d.Key))
	resent, err := t.WaitFor(drainWithin, func() (bool, error) { return faults.PoisonedSends() > refusals, nil })
	if err != nil {
		return err
	}
	if !resent {
		return t.neverResent(story, over, "the row sent again by the relay, under its key, and refused again by the core, whose limit it is still over: set aside again with the core's new answer")
	}
	err = t.delivered(strings.Join(story, "\n"), s, want, []string{taken, over})
	if f := (*judging.Failure)(nil); errors.As(err, &f) {
		f.Why = "a dead letter sent again before its cause is fixed is refused again, for good, and must be set aside again, with the core's new answer, as the first time: a relay that sets a row aside only while it holds no answer yet, or that keeps sending a re-driven row whatever the core says, leaves it owed for ever, refused on every pass, with no dead letter to tell the operator that the fix did not take"
	}
	if err != nil {
		return err
	}
	faults.LimitAmount(0)
	for _, id := range []string{over, taken} {
		d, err := t.redrive(id, &story, "the operator has the core lift its limit, and sends it again")
		if err != nil {
			return err
		}
		story = append(story, fmt.Sprintf("(it was set aside with %d %s; its row is owed again, under key %s: dead_at cleared, the core's answer kept as its last)", d.Status, core.InvalidPosting.URI(), d.Key))
	}
	posted, err := t.WaitFor(drainWithin, func() (bool, error) { return t.coreHoldsAll(owed{over: want[over]}) })
	if err != nil {
		return err
	}
	if !posted {
		return t.neverResent(story, over, "the row sent again by the relay, under its key, and posted once, now that the core takes it")
	}
	err = t.postedOnce(strings.Join(story, "\n"), s, want)
	if f := (*judging.Failure)(nil); errors.As(err, &f) && f.Harm == judging.PostedTwice {
		f.Why = "a re-driven row goes out under the key it was written with, the one every send of it used: the core may have taken an earlier send whose answer was lost before it refused the row (a rule of its own checked before its inbox), and a relay that gives the row a new key once it was refused, or for the re-drive, has the core post it a second time; the core keeps a posting under its key, never a refusal, so the same key is what gets it posted once"
	}
	return err
}

// neverResent fails S9.redrive: the core never received again the
// posting of id, which the story's operator re-drove.
func (t *T) neverResent(story []string, id, expected string) error {
	o, err := t.Lab().Outbox(t.ctx)
	if err != nil {
		return err
	}
	f := t.Fail(strings.Join(story, "\n"),
		fmt.Sprintf("the core never received the posting of %s again in %v: %s owed in the outbox, %s", id, drainWithin, counted(int(o.Counts.Pending), "row", "rows"), counted(int(o.Counts.Dead), "dead letter", "dead letters")),
		expected).(*judging.Failure)
	f.Harm, f.Refs = judging.NotPosted, []string{id}
	f.Why = "a row is owed while it is neither sent nor set aside, sent_at and dead_at both NULL, and an operator who fixed a dead letter's cause sends it again by making it so; the core's answer stays on the row as its last: a relay that reads owed by the answer's columns, or skips the rows it remembers setting aside, never sends it, and the transfer the operator meant to deliver never reaches the core, with no dead letter left to say so"
	return f
}

// redrive re-drives the dead letter of transfer id, as the operator in
// S9.redrive, adding what the operator did (did) and the request to the
// story. It returns the dead letter as it was, or a failure if the lab
// refused to send it again.
func (t *T) redrive(id string, story *[]string, did string) (bank.DeadLetter, error) {
	sent := fmt.Sprintf(`POST /lab/outbox/redrive {"transfer_id":%q}`, id)
	d, err := t.Lab().Redrive(t.ctx, id)
	if le := (*labclient.Error)(nil); errors.As(err, &le) {
		return d, t.Fail(strings.Join(append(*story, did+": "+sent), "\n"), le.Error(), "200: the dead letter GET /lab/outbox listed a moment ago, owed again")
	}
	if err != nil {
		return d, err
	}
	*story = append(*story, fmt.Sprintf("%s: %s  →  200", did, sent))
	return d, nil
}

// takenThenRefused makes one transfer over coreLimit, of A's to B's first
// account, whose posting the core takes and then refuses for good: it
// holds the relay's first request, lets it through with its answer lost
// (applied, then the connection dropped), and holds the next, the relay's
// send again, until it has set its limit (core.Faults.LimitAmount,
// coreLimit, which stays): a core that checks its rules before its inbox,
// and whose rule changed between the two sends. It adds the transfer to
// want and returns its id. A server that sends the core nothing leaves
// the core as it found it, limit aside, for delivered to judge.
func (t *T) takenThenRefused(s Scenario, want owed, story *[]string) (string, error) {
	faults := &t.Core().Faults
	faults.Hold()
	defer faults.Release()
	arrived := faults.Held()
	one := owed{}
	if err := t.pay(s, one, s.A, s.A.Accounts[0], s.B.Accounts[0], t.Amount(coreLimit+1, 3*coreLimit), t.Key(), story); err != nil {
		return "", err
	}
	var taken string
	for id, p := range one {
		taken, want[id] = id, p
	}
	waits, err := t.relayWaits(faults, arrived)
	if err != nil || !waits {
		faults.LimitAmount(coreLimit)
		*story = append(*story, fmt.Sprintf("the relay sent the core nothing for it; the core ledger posts at most %d won at once from now on, and refuses for good every posting of more (400 %s: a limit of its own, which the bank does not have)",
			coreLimit, core.InvalidPosting.URI()))
		return taken, err
	}
	faults.LoseAnswers(1)
	first := arrived
	arrived = faults.Held()
	faults.LetThrough()
	again, err := t.relayWaits(faults, arrived)
	if err != nil {
		return "", err
	}
	// One send let through, its answer lost, and none after it: the
	// relay settled the row on no answer. (A relay whose own timeout is
	// shorter than the check takes to see its first send may have sent
	// twice before the core let them through, and had an answer.)
	if !again && arrived-first == 1 {
		if err := t.sentNoMore(*story, taken); err != nil {
			return "", err
		}
	}
	faults.LimitAmount(coreLimit)
	*story = append(*story, fmt.Sprintf("the core ledger takes the posting of %s and its answer is lost; before the relay sends it again, the core starts to post at most %d won at once, and refuses for good every posting of more, checked before its inbox (400 %s: a limit of its own, which the bank does not have)",
		taken, coreLimit, core.InvalidPosting.URI()))
	return taken, nil
}

// sentNoMore fails S9.redrive when the relay, once the core took the
// posting of taken and its answer was lost (takenThenRefused), settled
// its row without sending it again: marked it sent, or set it aside. The
// core holds the posting once, so no money is harmed here, and the check
// cannot go on to the refusal it meant to make; judged as a dead letter,
// the row would be called one the core never received. A row still owed
// (a relay that waits long before it sends again) is no failure here.
func (t *T) sentNoMore(story []string, taken string) error {
	st, err := t.State()
	if err != nil || st.Outbox.Pending > 0 {
		return err
	}
	fate := "marked sent"
	for _, d := range st.DeadLetters {
		if d.TransferID == taken {
			fate = "set aside as a dead letter with " + answerText(d.Status, d.Answer)
		}
	}
	story = append(story, fmt.Sprintf("the core ledger takes the posting of %s and its answer is lost (the connection drops before it)", taken))
	f := t.Fail(strings.Join(story, "\n"),
		fmt.Sprintf("the relay sent the posting of %s no more: its row was %s, though no answer came (the core holds the posting once)", taken, fate),
		"the row still owed, and sent again under its key: a send whose answer was lost may or may not have been posted, and only the core's answer to the next one says which").(*judging.Failure)
	f.Refs = []string{taken}
	f.Why = "no answer is neither an acknowledgement nor a refusal: the core may have posted the request or not, so a relay that marks such a row sent loses every posting the core did not make (S9.lost-answers), and one that sets it aside hands a person a dead letter for what the core may hold; sent again under its key, the row is posted once or answered with the posting already made"
	return f
}

// deadLettersKept fails S9.poison when a dead letter of forGood, there
// before the lab clock moved on by more than a year, is gone after the purge that
// move ran: said so, rather than as a posting no dead letter ever named.
func (t *T) deadLettersKept(story string, forGood []string) error {
	st, err := t.State()
	if err != nil {
		return err
	}
	var gone []string
	for _, id := range forGood {
		if !slices.ContainsFunc(st.DeadLetters, func(d bank.DeadLetter) bool { return d.TransferID == id }) {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	sort.Strings(gone)
	f := t.Fail(story, fmt.Sprintf("the dead letters of %s, set aside before the clock moved, are gone after its purge (%d dead letters left)", strings.Join(gone, " and "), len(st.DeadLetters)),
		"every dead letter still there, as it was: a purge may delete the keys that expired, and the outbox rows the core took once they are old, never a dead letter, which stays until a person acts").(*judging.Failure)
	f.Harm = judging.NotPosted
	f.Refs = gone
	return f
}

// checkSlowCore catches a stage whose transfers wait on the core: while
// the core answers nothing at all, each transfer must still be answered,
// and not by a request that waited until a call to the core was given
// up. The kit's core client gives up after 5 s, so such a request is
// answered late rather than never; the check times nothing and reads
// instead, around each transfer, two counts of the server's: the
// postings of a transfer it gave up waiting for while the request that
// made it was still being served (the request's own call, or the
// relay's that it waited for: waiting is the relay's job; a posting a
// request left running as it answered held no one up), and every call
// to the core it gave up on. After the first transfer it sends each
// transfer only while a call the core holds is waiting (the relay inside
// its call with the first's posting): a relay that holds the database
// while it calls (on SQLite, its transaction's write lock) makes every
// transfer wait until that call is given up.
func checkSlowCore(t *T) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	faults := &t.Core().Faults
	faults.Hold()
	defer faults.Release()
	// The core's count of the requests it held and the server's of the
	// calls it gave up on, as the hold begins: the check compares what
	// each adds from here.
	held0 := faults.Held()
	start, err := t.Lab().Outbox(t.ctx)
	if err != nil {
		return err
	}
	story := []string{"the core ledger is slow beyond measure: it holds every posting, unanswered, until the transfers are done"}
	want := owed{}
	// spans counts the transfers in a row, from the second on, answered
	// only after a call to the core, waiting there when they were sent,
	// was given up. A correct relay's call can be given up during a
	// transfer by chance (sooner if it gives its calls a short timeout
	// of its own), so the check fails only when every transfer after
	// the first (spansToFail of them) waited. A relay that
	// holds the database across its calls makes every transfer wait for
	// one. The counts are read before the wait for the call: on an
	// in-memory database, read while such a relay calls, they wait for
	// its give-up as well.
	const spansToFail = 3
	spans := 0
	relayCalls := true
	for i := range 1 + spansToFail {
		before, err := t.Lab().Outbox(t.ctx)
		if err != nil {
			return err
		}
		if i > 0 && relayCalls && before.Counts.Pending == 0 {
			// Nothing owed, nothing for a relay to send: no call to wait
			// for (a stage with no outbox rows fails when the core
			// answers again).
			relayCalls = false
			story = append(story, "the outbox held nothing owed to the core")
		}
		if i > 0 && relayCalls {
			given := before.CoreGivenUp - start.CoreGivenUp
			if relayCalls, err = t.coreCallWaiting(faults, held0, given); err != nil {
				return err
			}
			if !relayCalls {
				story = append(story, fmt.Sprintf("the server sent the core nothing that waited there in %v", drainWithin))
			}
		}
		if err := t.payment(s, want, &story); err != nil {
			return err
		}
		after, err := t.Lab().Outbox(t.ctx)
		if err != nil {
			return err
		}
		if n := after.CoreUnanswered - before.CoreUnanswered; n > 0 {
			return t.Fail(strings.Join(story, "\n"),
				fmt.Sprintf("the last 201 came after the server gave up waiting for the core's answer to %d posting(s) of the transfer, sent while its request was still being served: the request waited for the core", n),
				"201 Created without waiting for the core: the transfer and its outbox row commit, and the relay posts the row on its own")
		}
		if i > 0 && relayCalls && after.CoreGivenUp > before.CoreGivenUp {
			spans++
			story[len(story)-1] += "  (sent while a call to the core waited there; answered after the server gave it up)"
		} else {
			spans = 0
		}
		if spans == spansToFail {
			return t.Fail(strings.Join(story, "\n"),
				fmt.Sprintf("the %d 201s after the first each came only after the server gave up a call to the core that was waiting there when the transfer was sent: each transfer waited for the relay's call to the core", spansToFail),
				"201 Created at once while the relay waits for the core: a relay that holds its transaction across its call to the core holds what every transfer needs (on SQLite, the write lock, which a read-write transaction takes at BEGIN), and every transfer waits for the core")
		}
	}
	faults.Release()
	story = append(story, "the core answers again")
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// coreCallWaiting waits until a call to the core waits inside it: the
// held core has taken more requests since the hold began (its count
// less held0) than the server had given up on since then (given), when
// the check last read that count. It reports false if none
// came within drainWithin. It reads nothing of the server's: a server
// that holds its database while it calls the core would keep the check
// waiting as well, until the call was given up.
func (t *T) coreCallWaiting(faults *core.Faults, held0 int, given int64) (bool, error) {
	return t.WaitFor(drainWithin, func() (bool, error) {
		return int64(faults.Held()-held0) > given, nil
	})
}

// backlogTransfers is how many transfers S9.backlog makes while the core
// is down: many relay batches of any sensible size.
const backlogTransfers = 300

// backlogClockBack is how far S9.backlog sets the lab clock back after
// the backlog's oldest transfer: every row written after it then reads,
// by its created_at, as older than the oldest.
const backlogClockBack = time.Hour

// backlogGivenUp is how many rounds in a row S9.backlog lets the server
// give up the held pass's call before it says it cannot tell.
const backlogGivenUp = 3

// checkBacklog catches a relay that cannot drain a backlog many batches
// long within drainWithin once the core is back, and one that leaves its
// oldest rows behind while new transfers keep coming: it reads the
// newest first. The core comes back holding each request until the
// check lets it go, so that the check sees the relay a pass at a time:
// while each pass waits there, the check makes as many transfers as the
// relay's last pass posted (as many as the backlog, before the first),
// a load as fast as the relay. Once the core holds as many postings as
// the backlog held rows, a relay that sends the oldest rows first has
// posted the oldest of them; one that reads the newest first posts only
// the load, for as long as it lasts. The lab clock is set back an hour
// after the oldest transfer, as an NTP step or an operator may set a
// server's: a relay that reads its rows oldest first by the time they
// were written (created_at), not by their ids, reads every row written
// since as older than the oldest, and leaves it behind the same way. It
// is set back once the core has refused the relay's try of the oldest
// and the relay pass that tried it has ended: a relay that waits to send
// a row refused for now again until a time on the lab clock, noted in
// that pass, leaves the oldest owed for the hour the clock went back.
func checkBacklog(t *T) error {
	s, up, err := t.coreDownScenario(1_000_000_000)
	if err != nil {
		return err
	}
	defer up()
	var story []string
	want := owed{}
	faults := &t.Core().Faults
	refused := faults.Refused()
	if err := t.payment(s, want, &story); err != nil {
		return err
	}
	oldest := slices.Collect(maps.Keys(want))[0]
	// The clock is set back once the relay has tried the oldest and the
	// core refused it: a relay that sends a row refused for now again
	// only after a time on the lab clock waits, from the step on, as
	// long again as the clock was set back. A relay that never tries it
	// meets the step before its first try.
	if _, err := t.WaitFor(drainWithin, func() (bool, error) { return faults.Refused() > refused, nil }); err != nil {
		return err
	}
	// And once the pass that tried it has ended: a relay that notes when
	// to send it again notes it after the core's answer, before its pass
	// returns, and a step between the two would come before the note.
	if err := t.relayPassEnds(); err != nil {
		return err
	}
	now, err := t.LabNow()
	if err != nil {
		return err
	}
	if err := t.SetClock(now.Add(-backlogClockBack)); err != nil {
		return err
	}
	// The oldest was made alone; the rest are made paceClients at a
	// time, so that a busy machine does not spend the check's time on
	// the backlog's requests one after the other.
	_, last, err := t.paymentsInRounds(s, want, backlogTransfers-1)
	if err != nil {
		return err
	}
	story = []string{fmt.Sprintf("the core ledger is down for %d transfers (%s … %s), the lab clock set back an hour after the first, once the core had refused the relay's try of it and that relay pass had ended (POST /lab/clock); then it comes back, holding each request until the check lets it go", backlogTransfers, story[0], last)}
	// The count is read before the hold: a pass that comes between the
	// two is held, and counts as one the check waits for.
	arrived, posted, load, givenUp := faults.Held(), 0, backlogTransfers, 0
	faults.Hold()
	defer faults.Release()
	up()
	for round := 1; ; round++ {
		waits, err := t.relayWaits(faults, arrived)
		if err != nil {
			return err
		}
		if !waits {
			break
		}
		ps, err := t.Postings()
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ps, func(p core.Receipt) bool { return p.TransferID == oldest }) {
			break
		}
		if len(ps) >= backlogTransfers {
			// The oldest row no longer owed (marked sent, or set aside)
			// was not passed over for newer ones: postedOnce names what
			// became of it.
			if gone, err := t.noLongerOwed(oldest); err != nil || gone {
				if err != nil {
					return err
				}
				break
			}
			story = append(story, loaded(len(want)))
			return t.Fail(strings.Join(story, "\n"),
				fmt.Sprintf("%d postings in the core ledger, at least as many as the backlog's %d rows, and the oldest transfer of the backlog (%s, the first above) not among them: the relay sent newer rows first", len(ps), backlogTransfers, oldest),
				"the backlog posted before the transfers made after it: a relay that reads the newest rows first, or the oldest by a clock that was set back (created_at) rather than by their ids, leaves the oldest owed for as long as new transfers keep coming, and one that sends a row refused for now again only after a time on that clock leaves it owed for as long as the clock was set back")
		}
		if round > 1 && givenUp == 0 {
			// The last pass's postings; none: the load stops, and the
			// relay drains what is owed.
			if load = len(ps) - posted; load == 0 {
				break
			}
		}
		posted = len(ps)
		before, err := t.Lab().Outbox(t.ctx)
		if err != nil {
			return err
		}
		if _, _, err := t.paymentsInRounds(s, want, load); err != nil {
			return err
		}
		after, err := t.Lab().Outbox(t.ctx)
		if err != nil {
			return err
		}
		// A pass whose call the server gave up while the check made the
		// load (a machine so slow that the load outlasted the core
		// client's timeout) posted nothing, and says nothing of the load:
		// the next round makes as many again.
		if after.CoreGivenUp > before.CoreGivenUp {
			if givenUp++; givenUp == backlogGivenUp {
				return t.CouldNotObserve("the relay a pass at a time: the server gave up its call to the held core in %d rounds in a row while the check made %d transfers (a busy machine)", givenUp, load)
			}
		} else {
			givenUp = 0
		}
		arrived = faults.Held()
		faults.Release()
		faults.Hold()
	}
	faults.Release()
	if len(want) > backlogTransfers {
		story = append(story, loaded(len(want))+"; then the core answers at once")
	}
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// relayPassEnds waits, up to drainWithin, until a relay pass has ended
// since it was called: the pass running then, or, if none was, the next.
// A relay whose pass outlasts it meets what comes next in that pass.
func (t *T) relayPassEnds() error {
	from, err := t.Lab().Outbox(t.ctx)
	if err != nil {
		return err
	}
	_, err = t.WaitFor(drainWithin, func() (bool, error) {
		to, err := t.Lab().Outbox(t.ctx)
		return to.RelayPasses > from.RelayPasses, err
	})
	return err
}

// noLongerOwed reports whether the outbox row of transfer id is marked
// sent or set aside as a dead letter.
func (t *T) noLongerOwed(id string) (bool, error) {
	st, err := t.State()
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(st.DeadLetters, func(d bank.DeadLetter) bool { return d.TransferID == id }) {
		return true, nil
	}
	listed, err := t.transfersListed([]string{id})
	return listed[id].OutboxSentAt != "", err
}

// loaded says, for S9.backlog's story, how many transfers the check made
// after the backlog, made transfers in all.
func loaded(made int) string {
	return fmt.Sprintf("%d transfers more, made while the relay's passes waited in the core, as many each time as the pass before posted", made-backlogTransfers)
}

// commitOrderRounds is how many times S9.commit-order sends paceClients
// transfers at once with the held-commit fault armed once. On PostgreSQL
// a relay that passes a held row by, or marks it without reading it,
// lost one row in every round in nine runs of eleven, and in two rounds
// of three in the other two (the first round's transfers also wait for
// the server's pool to open connections), when the commit was held a
// fixed 100 ms; one that marked without reading lost none in one run of
// fifteen on a loaded machine, the others' rows not yet read when the
// held one committed. Held until a relay request reaches the core, it
// lost one row in every round in 18 runs of 20 there, and in two rounds
// of three in the other two (the request's rows may all have lower ids
// than the held one's).
const commitOrderRounds = 3

// commitHeldFor is how long S9.commit-order lets the held commit wait at
// most for a relay request to reach the core. On PostgreSQL one does within
// a few tens of milliseconds; on SQLite none does (the held transaction
// keeps the write lock, and nothing else commits), and each round waits
// this long.
const commitHeldFor = 500 * time.Millisecond

// checkCommitOrder catches a relay that reads only the rows after the
// last one it settled (a high-water mark on the outbox's id). On
// PostgreSQL a row's id is drawn when the row is written, and the row is
// seen when its transaction commits: two transfers that run side by side
// may commit out of the order of their ids, and a row that commits after
// the relay read and settled a higher id is never read. The lab makes it
// happen: two customers pay each other at once, from accounts that share
// no row, with the relay running, and the held-commit fault holds up the
// COMMIT of the round's first transaction to move money, its outbox row
// written with it, while the other customer's transfers commit rows with
// later ids, until a relay request reaches the core (or commitHeldFor);
// the core holds the relay's requests until every transfer of the round
// has answered, so that a pass that read the others settles after the
// held row committed. That catches a relay that marks every owed row up
// to the last id it read as well: the held row, with a lower id,
// committed between its read and its mark. (SQLite runs one writer at a
// time: the held transaction keeps the write lock, everyone waits, and
// its rows commit in the order of their ids.) After a round whose relay
// request waited in the core, the relay is kept busy (keptBusy), and the
// round's transfers must be posted before those made after them: a relay
// that looks behind its mark only once it finds nothing new posts the
// held row only when transfers stop coming; that is said once every
// transfer is posted, so that a row never posted is named as such first.
func checkCommitOrder(t *T) error {
	s, err := t.coreScenario(1_000_000_000)
	if err != nil {
		return err
	}
	want := owed{}
	var first, last string
	rounds, held, waited, readBehind, observed := 0, 0, 0, 0, 0
	// late is the first round whose transfers the relay had not posted
	// while it was kept busy after them.
	var late *judging.Failure
	faults := &t.Core().Faults
	defer faults.Release()
	for range commitOrderRounds {
		// A round starts with nothing owed, the relay between passes; a
		// row still owed after the wait is reported at once, below.
		if pending, err := t.Drained(drainWithin); err != nil || pending > 0 {
			if err != nil {
				return err
			}
			break
		}
		if err := t.Arm(labctl.HeldCommit, 1); err != nil {
			return err
		}
		arrived := faults.Held()
		faults.Hold()
		rounds++
		// The first transfer to reach its COMMIT is held there; nothing
		// else that moved money has committed before it, so a relay
		// request that reaches the core carries rows read while the held
		// one was not yet seen. Then the held commit goes.
		released := make(chan heldRelease, 1)
		go func() {
			released <- t.releaseHeldCommits(commitHeldFor, func() (bool, error) { return faults.Held() > arrived, nil })
		}()
		round := owed{}
		f, l, err := t.paymentsAtOnce(s, round, paceClients)
		r := <-released
		if err != nil || r.err != nil {
			return cmp.Or(err, r.err)
		}
		maps.Copy(want, round)
		if r.held && r.reached {
			readBehind++
		}
		// Every transfer of the round has committed, the held one too:
		// a pass that read the others before it waits in the core, and
		// settles after it committed.
		passWaited := faults.Held() > arrived
		var behind []string
		if passWaited {
			if behind, err = t.keptBusy(s, want, round, faults); err != nil {
				return err
			}
		}
		faults.Release()
		if first == "" {
			first = f
		}
		last = l
		if r.held {
			held++
		}
		if passWaited {
			waited++
		}
		if r.held && passWaited {
			observed++
		}
		if len(behind) > 0 && late == nil {
			sort.Strings(behind)
			story := fmt.Sprintf("two customers pay each other, %d transfers at once, from accounts that share no row (%s … %s), while the relay runs; the held-commit fault holds the COMMIT of the first transfer to reach it, its outbox row written, while the transfers beside it go on, until a relay request reaches the core (%v at most), and the core ledger holds each posting request until every transfer of the round has answered; then, while each of the relay's next requests waits in the core, %d transfers more",
				paceClients, f, l, commitHeldFor, paceClients)
			fail := t.Fail(story,
				fmt.Sprintf("the core ledger holds postings of transfers made after the round, the relay's request after those has gone through too, and it still does not hold the postings of %s, their rows still owed: the relay read newer rows, after the ones it had settled, before the oldest owed", fewOf(behind)),
				"every transfer of the round posted before any made after them: the relay reads the oldest owed rows first, and a row that committed behind higher ids is among them").(*judging.Failure)
			fail.Refs = behind
			fail.Why = "a row's id is drawn when it is written and the row is seen when its transaction commits: a relay that reads on from the last row it settled, and looks behind it only once it finds nothing new, leaves a row that committed behind higher ids owed for as long as transfers keep coming, and a lull may be hours away"
			late = fail
		}
	}
	story := fmt.Sprintf("two customers pay each other %d times, %d transfers at once, from accounts that share no row (%s … %s), while the relay runs; in each round the held-commit fault holds the COMMIT of the first transfer to reach it, its outbox row written, while the transfers beside it go on (on SQLite they wait for its write lock), until a relay request reaches the core (%v at most), and the core ledger holds each posting request until every transfer of the round has answered, and after a round whose request waited there, %d transfers more while each of the relay's next requests waits (%d at most): a commit was held in %d of the %d rounds, a relay request reached the core while it was held in %d, and one waited in the core in %d",
		rounds, paceClients, first, last, commitHeldFor, paceClients, busySteps, held, rounds, readBehind, waited)
	err = t.postedOnce(story, s, want)
	if err == nil && late != nil {
		// Every row reached the core in the end, once the load stopped:
		// the relay read the held ones only when it found nothing new.
		return late
	}
	if err != nil || observed > 0 {
		return err
	}
	// Posted once, but no round both held a commit and had a relay pass
	// wait in the core meanwhile: whether the relay reads, or marks, a
	// row that commits behind higher ids stays unseen.
	return t.CouldNotObserve(fmt.Sprintf("a row committed behind higher ids: with the held-commit fault armed, a transaction that moved money was held at its COMMIT in %d of %d rounds, and a relay pass waited in the core while the round's transfers were made in %d; no round had both, so whether the relay reads, or marks, a row that commits after it read higher ids is unknown", held, rounds, waited))
}

// busySteps is how many of the relay's requests S9.commit-order keeps
// busy at most after a round whose relay request waited in the core:
// while each waits there, paceClients transfers more commit, so that each
// pass after it finds rows it never read. A relay that reads the oldest
// owed rows first posts every row of the round before any of those,
// whether a request carries a row or a whole pass; one that reads only
// the rows after the last one it settled, and looks behind it only once
// it finds nothing new, posts the later ones and never the round's held
// row while transfers keep coming. Three requests show that: the round's
// own, the next, which the later transfers' rows are in, and one more.
// The fourth is one to spare: a relay whose next request carries rows of
// the round alone (its passes read fewer rows than a round makes) posts
// the later transfers' rows a request later.
const busySteps = 4

// keptBusy keeps the relay busy after a round (see busySteps), the
// round's request waiting in the held core, and returns the transfers of
// round whose rows are still owed once the core has applied postings of
// transfers made after them and then the relay's next request (which
// lets go whatever else the request that posted them was sent with). It
// returns none when the round's transfers are all posted first, when a
// call to the core was given up meanwhile (a busy machine: a request that
// posted nothing says nothing of which rows the relay reads), or when the
// relay had nothing owed to send; a row marked sent or set aside without
// being posted is left to postedOnce, which names it.
func (t *T) keptBusy(s Scenario, want, round owed, faults *core.Faults) ([]string, error) {
	before, err := t.Lab().Outbox(t.ctx)
	if err != nil {
		return nil, err
	}
	later := owed{}
	laterPosted := false
	for range busySteps {
		if _, _, err := t.paymentsAtOnce(s, later, paceClients); err != nil {
			return nil, err
		}
		maps.Copy(want, later)
		// The waiting request goes on; the next one waits in turn, and,
		// once it does, the one let through has been applied and settled.
		arrived := faults.Held()
		faults.LetThrough()
		waits, err := t.relayWaits(faults, arrived)
		if err != nil || !waits {
			return nil, err
		}
		ps, err := t.Postings()
		if err != nil {
			return nil, err
		}
		behind, err := t.stillOwed(round, ps)
		if err != nil || len(behind) == 0 {
			return nil, err
		}
		if laterPosted {
			after, err := t.Lab().Outbox(t.ctx)
			if err != nil || after.CoreGivenUp > before.CoreGivenUp {
				return nil, err
			}
			return behind, nil
		}
		laterPosted = slices.ContainsFunc(ps, func(p core.Receipt) bool { _, ok := later[p.TransferID]; return ok })
	}
	return nil, nil
}

// stillOwed returns the transfers of round that ps, the core's postings,
// does not hold and whose rows are still owed.
func (t *T) stillOwed(round owed, ps []core.Receipt) ([]string, error) {
	var behind []string
	for id := range round {
		if slices.ContainsFunc(ps, func(p core.Receipt) bool { return p.TransferID == id }) {
			continue
		}
		gone, err := t.noLongerOwed(id)
		if err != nil {
			return nil, err
		}
		if !gone {
			behind = append(behind, id)
		}
	}
	return behind, nil
}

// heldRelease is what releaseHeldCommits saw as it let the held commits
// go: held, whether every commit the held-commit fault was armed for was
// being held; reached, whether the awaited event had come.
type heldRelease struct {
	held, reached bool
	err           error
}

// releaseHeldCommits waits until event reports true, or within has
// passed, then disarms the held-commit fault, whatever went wrong, which
// lets every commit it holds go. It reports whether the armed commits
// were all held by then (one that reaches its COMMIT after is let through
// at once).
func (t *T) releaseHeldCommits(within time.Duration, event func() (bool, error)) heldRelease {
	reached, waitErr := t.WaitFor(within, event)
	left, armedErr := t.Lab().Armed(t.ctx)
	held := armedErr == nil && left[labctl.HeldCommit] == 0
	disarmErr := t.Arm(labctl.HeldCommit, 0)
	return heldRelease{held: held, reached: reached, err: cmp.Or(waitErr, armedErr, disarmErr)}
}

// relayWaits waits until a request of the relay's waits in the held
// core (it has held more than arrived), or until nothing is owed. It
// reports false if nothing waits there.
func (t *T) relayWaits(faults *core.Faults, arrived int) (bool, error) {
	if _, err := t.WaitFor(drainWithin, func() (bool, error) {
		if faults.Held() > arrived {
			return true, nil
		}
		st, err := t.State()
		return err == nil && st.Outbox.Pending == 0, err
	}); err != nil {
		return false, err
	}
	return faults.Held() > arrived, nil
}

// answeredAtCore reports whether the core has posted transfer id, and
// whether it has refused transfer dead's posting for good.
func (t *T) answeredAtCore(id, dead string) (posted, refused bool, err error) {
	_, refused = t.Core().Faults.Answer(dead)
	ps, err := t.Postings()
	return slices.ContainsFunc(ps, func(p core.Receipt) bool { return p.TransferID == id }), refused, err
}

// checkLostCoreAnswers catches a relay that sends again under a new key,
// and one that takes no answer for an acknowledgement, a timeout
// included: the core first keeps silent on a request until the server
// gives up waiting (armed with core-timeout, after 100 ms rather than
// 5 s), then drops two or three requests before it applies anything,
// then loses the answers of postings it applied; nothing of the first two is posted,
// and the relay cannot tell any of them from the third. The first
// transfer is made alone, and the others only once the silence and the
// drops are spent: every request of the relay's until then carries its
// row, whether it sends a batch or a row at a time, so that the row goes
// unanswered three times or more before the core applies it.
func checkLostCoreAnswers(t *T) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	if err := t.Arm(labctl.CoreTimeout, 1); err != nil {
		return err
	}
	// Two drops at least: with the silence, a row goes unanswered three
	// times before the core applies it, so that a relay that takes three
	// sends without an answer for a posting made is caught whatever the
	// seed; one drop caught it on some seeds only, and made with the
	// others, a relay that sends a row at a time and goes on after one
	// unanswered spread the drops over their rows.
	dropped, n := 2+t.rng.IntN(2), 3+t.rng.IntN(3)
	faults := &t.Core().Faults
	faults.Silence(1)
	faults.DropUnapplied(dropped)
	faults.LoseAnswers(n)
	story := []string{fmt.Sprintf("the core ledger keeps silent on its next posting request until the server gives up waiting (armed: %s, so after %v), applying nothing; then it drops its next %d posting requests before it applies anything (no answer, nothing posted), then applies the next %d postings and loses its answers",
		labctl.CoreTimeout, core.HurriedTimeout, dropped, n)}
	want, err := t.payments(s, 1, &story)
	if err != nil {
		return err
	}
	// A relay that owes the row no more (marked sent, or set aside) or
	// never sends it leaves them unspent: the wait ends, and postedOnce
	// says what became of the transfers.
	spent := false
	_, err = t.WaitFor(drainWithin, func() (bool, error) {
		if spent = faults.Unanswering() == 0; spent {
			return true, nil
		}
		st, err := t.State()
		return err == nil && st.Outbox.Pending == 0, err
	})
	if err != nil {
		return err
	}
	if spent {
		story = append(story, fmt.Sprintf("the core leaves %d posting requests unanswered, then the next transfers are made", 1+dropped))
	}
	more, err := t.payments(s, n-1, &story)
	if err != nil {
		return err
	}
	maps.Copy(want, more)
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// armedTransfer is a transfer sent with a fault point armed: who pays
// whom how much, under which op, and the request.
type armedTransfer struct {
	c        *T
	s        Scenario
	from, to string
	amount   int64
	op       string
	req      Request
}

// armedPayment starts the subject as a child process and sends payArmed's
// transfer there, point armed: a crash point needs a server that can die
// and restart.
func (t *T) armedPayment(point string) (armedTransfer, Response, []string, error) {
	if err := t.watchesCore(); err != nil {
		return armedTransfer{}, Response{}, nil, err
	}
	c, err := t.OnChild()
	if err != nil {
		return armedTransfer{}, Response{}, nil, err
	}
	return c.payArmed(point, 1)
}

// payArmed resets the subject to two customers, arms point times times
// and sends one transfer of A's to B. It returns the payment, its first
// answer and the story so far.
func (t *T) payArmed(point string, times int) (armedTransfer, Response, []string, error) {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return armedTransfer{}, Response{}, nil, err
	}
	p := armedTransfer{c: t, s: s, from: s.A.Accounts[0], to: s.B.Accounts[0], amount: t.Amount(1_000, 50_000), op: t.Op()}
	s.Books.Expect(p.op)
	p.req = Transfer(s.A, t.Key(), TransferBody(p.from, p.to, p.amount, p.op))
	if err := t.Arm(point, times); err != nil {
		return armedTransfer{}, Response{}, nil, err
	}
	armed := point
	if times > 1 {
		armed = fmt.Sprintf("%s, %d times", point, times)
	}
	r := t.Do(p.req)
	return p, r, []string{p.req.String() + "\n(armed: " + armed + ")  →  " + r.Short()}, nil
}

// posted books the payment with id and checks it was posted once.
func (p armedTransfer) posted(story []string, id string) error {
	p.s.Books.Transfer(p.op, p.from, p.to, p.amount)
	return p.c.postedOnce(strings.Join(story, "\n"), p.s, owed{id: {TransferID: id, From: p.from, To: p.to, Amount: p.amount}})
}

// retriedThenPosted retries the payment with its key until it is done:
// it executed before the crash, so the retry must get its 201; then it
// must be posted once.
func (p armedTransfer) retriedThenPosted(story []string, expected string) error {
	lease, err := p.c.lease()
	if err != nil {
		return err
	}
	final, retries, err := p.c.retryUntilDone(p.req, lease, strings.Join(story, "\n"), expected)
	if err != nil {
		return err
	}
	story = append(story, "the client retries"+retries)
	if !final.Is(http.StatusCreated, "") || resourceID(final) == "" {
		return p.c.Fail(strings.Join(story, "\n"), final.String(), expected)
	}
	return p.posted(story, resourceID(final))
}

// checkCrashAfterPost catches a relay whose row goes out under another
// key after a restart (a key drawn per attempt, or per process). A relay
// that marks rows sent before sending them passes it: its row was marked
// and posted before the crash; S9.core-down catches that one. The crash may
// come before the transfer's own answer is sent (the relay runs on its
// own): the client then learns its transfer from the retry.
func checkCrashAfterPost(t *T) error {
	p, r, story, err := t.armedPayment(labctl.CrashAfterPost)
	if err != nil {
		return err
	}
	c := p.c
	if toldRan(r, p.op) {
		// A server alive with an empty outbox has nothing to post, and
		// will not crash: there is nothing to wait for.
		if rows, err := c.outboxRows(); err == nil && rows == 0 {
			return p.posted(append(story, "the outbox holds no row for the transfer"), resourceID(r))
		}
	}
	exited, err := c.Crashed(drainWithin)
	if err != nil {
		return err
	}
	if exited {
		if err := c.Restart(); err != nil {
			return err
		}
		story = append(story, "the server dies as the core's answer arrives, before the relay marks the row sent; it restarts on the same database")
	} else {
		story = append(story, fmt.Sprintf("the server did not die in %v: the core never answered a posting of its", drainWithin))
	}
	return p.retriedThenPosted(story, "201 Created: the transfer executed before the crash, and its retry gets its answer")
}

// checkCrashAfterCommitPosted catches a stage that posts to the core from
// the request, after its commit, instead of through an outbox row
// committed with the money.
func checkCrashAfterCommitPosted(t *T) error {
	p, _, story, err := t.armedPayment(labctl.CrashAfterCommit)
	if err != nil {
		return err
	}
	exited, err := p.c.Crashed(drainWithin)
	if err != nil {
		return err
	}
	if !exited {
		return fmt.Errorf("the %s fault was armed and the request sent, but the server did not exit", labctl.CrashAfterCommit)
	}
	if err := p.c.Restart(); err != nil {
		return err
	}
	story = append(story, "the server restarts on the same database")
	return p.retriedThenPosted(story, "201 Created: the retry replays the answer the crash lost")
}

// outboxRefusals is how many outbox rows S9.outbox-write-fails has the
// database refuse: the transfer's, and the next one written after it.
// The second is the row a server writes again on its own once the
// transfer committed without it; a server that fails the transfer meets
// it in the client's first retry, and the second retry executes.
const outboxRefusals = 2

// checkOutboxWriteFails catches a transfer that commits without its
// outbox row: an enqueue whose error is logged or dropped, or one that
// lets the transfer commit and writes the row again afterwards, in a
// transaction of its own. The database refuses the transfer's row, and
// the next one written after it (outboxRefusals): the transfer must fail
// with it, moving nothing and releasing its claim, so that the client's
// retries execute it; or, if it executed anyway, its row must be there
// all the same. A row written again after the commit is two writes again:
// the second refusal stands for anything that comes between them (a
// crash, the database down), and the row is lost. Either way the books
// judge: executed once, posted once.
func checkOutboxWriteFails(t *T) error {
	if err := t.watchesCore(); err != nil {
		return err
	}
	p, first, story, err := t.payArmed(labctl.FailOutboxWrite, outboxRefusals)
	if err != nil {
		return err
	}
	left, err := t.Lab().Armed(t.ctx)
	if err != nil {
		return err
	}
	fired := left[labctl.FailOutboxWrite] < outboxRefusals
	if fired {
		story = append(story, "(the fault fired: the database refused the transfer's outbox row; it refuses the next outbox row written after it as well)")
	} else {
		story = append(story, "(the fault did not fire: no statement inserted an outbox row)")
	}
	// Told that it ran (a 201, or another 2xx naming its op and its
	// transfer): the books expect it, posted once; another status than
	// 201 is a contract difference.
	if toldRan(first, p.op) && resourceID(first) != "" {
		if !first.Is(http.StatusCreated, "") {
			t.Differ(strings.Join(story, "\n"), first.String(), "201 Created: the transfer executed")
		}
		if err := p.posted(story, resourceID(first)); err != nil || fired {
			return err
		}
		// Posted once, but its outbox row was never refused: what the
		// transfer does when it is stays unseen.
		return t.CouldNotObserve("a refused outbox row: the transfer executed with the fail-outbox-write fault armed, and no statement the server ran matched an INSERT into outbox (the fault knows INSERT, INSERT OR …, REPLACE INTO and MERGE … THEN INSERT; a row written another way, or in another table, is not refused), so what the transfer does when its row is refused is unknown")
	}
	// Money first: the attempt that failed must have moved nothing.
	if err := t.Reconcile(strings.Join(story, "\n"), first.Short(), p.s.Books); err != nil {
		return err
	}
	lease, err := t.lease()
	if err != nil {
		return err
	}
	const executes = "201 Created: each attempt whose outbox row was refused failed with it and moved nothing, its claim released (stage 3), and the retry after them executes"
	final, retries, err := t.retryUntilDone(p.req, lease, strings.Join(story, "\n"), executes)
	if err != nil {
		return err
	}
	story = append(story, "the client retries"+retries)
	if toldRan(final, p.op) && resourceID(final) != "" && !final.Is(http.StatusCreated, "") {
		t.Differ(strings.Join(story, "\n"), final.String(), executes)
		return p.posted(story, resourceID(final))
	}
	if !final.Is(http.StatusCreated, "") || resourceID(final) == "" {
		if err := t.Reconcile(strings.Join(story, "\n"), final.Short(), p.s.Books); err != nil {
			return err
		}
		return t.Fail(strings.Join(story, "\n"), final.String(), executes)
	}
	return p.posted(story, resourceID(final))
}

// settleRefusals is how many of the relay's writes to outbox rows the
// database refuses in S9.settle-fails: more than a server's connections
// to PostgreSQL (pgdb.MaxOpenConns), so that a relay that leaves its
// transaction open at each refusal runs out of them, as on SQLite the
// first one it leaves open keeps the write lock.
const settleRefusals = pgdb.MaxOpenConns + 16

// checkSettleFails catches a relay that leaves its settling transaction
// open when its own database refuses a write of it (a mark, a dead
// letter): the transaction holds its connection for as long as the
// process lives, and on SQLite, begun IMMEDIATE, the write lock, so that
// no transfer commits again and no later pass settles anything. The rows
// of a refused settle are still owed, and go again under their keys: the
// core answers with the postings it made.
func checkSettleFails(t *T) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	if err := t.Arm(labctl.FailOutboxSettle, settleRefusals); err != nil {
		return err
	}
	story := []string{fmt.Sprintf("the server's database refuses the relay's next %d statements that update outbox rows (armed: %s), as a full disk or a lock timeout would, and takes them again after",
		settleRefusals, labctl.FailOutboxSettle)}
	want, err := t.payments(s, 3+t.rng.IntN(3), &story)
	if err != nil {
		return err
	}
	// The relay has drainWithin for each refusal, not for all of them: one
	// that waits a while after its database refused it, as one backing
	// off a failing database does, is slow to spend the count, not stuck.
	left := int64(settleRefusals)
	for left > 0 {
		before := left
		moved, err := t.WaitFor(drainWithin, func() (bool, error) {
			armed, err := t.Lab().Armed(t.ctx)
			if err != nil {
				return false, err
			}
			left = armed[labctl.FailOutboxSettle]
			return left < before, nil
		})
		if err != nil {
			return err
		}
		if !moved {
			break
		}
		// Drawn where the check saw the count go down, its first look
		// after the refusal (after the transfers, for one made while they
		// ran): the relay's writes come after the requests that made its
		// rows, and a timeline shows where they were refused.
		t.history.Lab(timeline.WriteRefused, fmt.Sprintf("%s: %d of the relay's writes to the outbox refused by now, %d to go",
			labctl.FailOutboxSettle, settleRefusals-left, left))
	}
	refused := settleRefusals - left
	if left > 0 {
		// What the count says: every statement of the relay's run with its
		// pass's context that updates outbox rows is refused while the
		// fault is armed, so none ran meanwhile. A write made another way
		// (a context of the relay's own, a MERGE) is not counted.
		got := fmt.Sprintf("the database refused %d of them; then, for %v, the relay ran no more UPDATE of outbox with the context its pass was given", refused, drainWithin)
		if refused == 0 {
			got = fmt.Sprintf("in %v the database refused none of them: the relay ran no UPDATE of outbox with the context its pass was given", drainWithin)
		}
		// Read only now, and for stateRead at most: a transaction left
		// open holds up the lab's read until the lab client gives up, and
		// once a write of the relay's was refused the check's verdict is
		// already that the relay stopped; the read tells a relay none of
		// whose writes was refused that drained (nothing owed, which a
		// server that answers at all says at once) from one that did not.
		st, err := t.stateSoon()
		switch {
		case err != nil && refused == 0:
			// No write of the relay's was refused, and without the
			// outbox nothing says whether it settled every row with a
			// context of its own or settled none: a server that cannot
			// be read is not failed for a guess.
			return t.CouldNotObserve("a refused write of the relay's: in %v no statement the relay ran with the context its pass was given matched an UPDATE of outbox, and the lab could not read the outbox in %v (%v) to tell a relay that settled every row another way from one that settled none",
				drainWithin, stateRead, err)
		case err != nil:
			got += fmt.Sprintf("; the lab could not read the outbox either in %v (%v): something holds the server's database", stateRead, err)
		case st.Outbox.Pending == 0:
			// Nothing was owed: every row sent without a refused write,
			// or none written at all, which leaves the transfers unposted
			// (a server before stage 9) and is a failure.
			if err := t.postedOnce(strings.Join(story, "\n"), s, want); err != nil {
				return err
			}
			return t.CouldNotObserve("a refused write of the relay's: the outbox drained with the %s fault still armed %d times, so no statement the relay ran with the context its pass was given matched an UPDATE of outbox, and what the relay does when its database refuses a mark is unknown; the fault knows the relay's statements by a value the kit puts in that context, so for the check to see it, run every statement of Relay with the ctx the kit passes it, or a context made from it (context.WithTimeout(ctx, …) and context.WithoutCancel(ctx) keep its values; context.Background() has none), and mark rows with an UPDATE of outbox (a row marked another way, a MERGE or an upsert, is not refused)",
				labctl.FailOutboxSettle, left)
		default:
			got += ", " + counted(int(st.Outbox.Pending), "row", "rows") + " still owed"
		}
		return t.Fail(strings.Join(story, "\n"), got,
			"a refused write of the relay's fails its pass only, its transaction rolled back: the rows stay owed, and the next pass sends them again and settles them once the database takes the writes")
	}
	story = append(story, fmt.Sprintf("the database refuses %d of the relay's writes to the outbox, then takes them", refused))
	more, err := t.payments(s, 1+t.rng.IntN(2), &story)
	if err != nil {
		return err
	}
	maps.Copy(want, more)
	return t.postedOnce(strings.Join(story, "\n"), s, want)
}

// checkOutboxTimesThenWritten is checkOutboxTimes, then, with the core
// back, one more transfer held in its wait on the core's confirmation
// while the lab clock moves on (see rowWrittenAfterTheWait).
func checkOutboxTimesThenWritten(t *T) error {
	if err := checkOutboxTimes(t); err != nil {
		return err
	}
	return rowWrittenAfterTheWait(t)
}

// outboxWaitLatencies are the core latencies rowWrittenAfterTheWait holds
// its transfer with, the longer tried when the lab clock's move did not
// land in the first's wait (a loaded machine).
var outboxWaitLatencies = []time.Duration{2 * time.Second, 8 * time.Second}

// rowWrittenAfterTheWait catches an outbox row stamped with the lab clock
// read when the request arrived (a handler that reads "now" first and
// hands it down), not when the transfer is made: it holds a transfer in
// its wait on the core's confirmation, moves the lab clock on by hours
// while it waits, and requires the row's created_at after the move.
func rowWrittenAfterTheWait(t *T) error {
	s, err := t.coreScenario(1_000_000)
	if err != nil {
		return err
	}
	defer t.Configure(labclient.Config{NoCoreLatency: true})
	for _, latency := range outboxWaitLatencies {
		op := t.Op()
		s.Books.Expect(op)
		from, to, amount := s.A.Accounts[0], s.B.Accounts[0], t.Amount(1_000, 50_000)
		req := Transfer(s.A, t.Key(), TransferBody(from, to, amount, op))
		held, err := t.Hold(req, latency)
		if err != nil {
			return err
		}
		moved := time.Duration(1+t.rng.IntN(23)) * time.Hour
		var movedTo time.Time
		inWait := held.Seen && held.Early()
		if inWait {
			if err := t.Advance(moved); err != nil {
				return err
			}
			if movedTo, err = t.LabNow(); err != nil {
				return err
			}
			inWait = held.Early()
		}
		r := held.Wait()
		if !r.Is(http.StatusCreated, "") || resourceID(r) == "" {
			return t.Fail(req.String()+"  →  "+r.Short(), r.String(), "201 Created: the transfer executes, whatever the core ledger is doing")
		}
		s.Books.Transfer(op, from, to, amount)
		if !inWait {
			continue
		}
		id := resourceID(r)
		listed, err := t.transfersListed([]string{id})
		if err != nil {
			return err
		}
		x := listed[id]
		if x.OutboxAt == "" {
			return t.CouldNotObserve("when the outbox row of %s was written: GET /lab/transfers lists no created_at for it once the transfer was answered", id)
		}
		if created, err := time.Parse(time.RFC3339Nano, x.OutboxAt); err == nil && !created.Before(movedTo) {
			return nil
		}
		story := fmt.Sprintf("%s  (the core's confirmation held %v)\n(POST /lab/clock, while it waits: the lab clock moved on %v, to %s)\n→  %s",
			req.String(), latency, moved, clock.Format(movedTo), r.Short())
		return t.Fail(story, fmt.Sprintf("%s's outbox row: created_at %s", id, x.OutboxAt),
			fmt.Sprintf("created_at ≥ %s: the row is written with the transfer, once the core has confirmed it, after the move; a time read when the request arrived says the row was written before its transfer was made", clock.Format(movedTo)))
	}
	return t.CouldNotObserve("when an outbox row is written: in %d tries the lab clock's move did not land while a transfer waited on the core's confirmation", len(outboxWaitLatencies))
}
