package grader

import (
	"fmt"
	"strings"

	"idemlab/kit/bank"
	"idemlab/kit/core"
)

const (
	// paceTransfers is how many transfers S9.commits-per-posting makes
	// while the core ledger is down: enough that one commit a posting
	// and one a batch are far apart, and no more than one batch of a
	// usual size holds, so that the check judges the relay's writes
	// alone (a backlog many batches long is S9.backlog's).
	paceTransfers = 160
	// paceClients is how many of them are sent at once, round after
	// round: the load a relay must keep up with.
	paceClients = 16
	// postingsPerCommit is how many postings the relay must settle, at
	// the least, for each commit it spends on them: any batch of more
	// than a few rows marked in one transaction passes; a row marked in a
	// write of its own, one commit a posting, does not.
	postingsPerCommit = 5
)

// checkCommitsPerPosting catches a relay that marks each acknowledged
// row sent in a write of its own. It counts, through the lab's commit
// counter, the transactions the server commits while the relay drains a
// backlog and nothing else writes: a count, never a time, so a fast
// machine cannot hide the cost. Only the commits that changed outbox
// rows count: an empty transaction a relay commits on a pass with nothing
// to mark costs little, and how many such passes fall inside the wait
// depends on the machine's speed, not on the relay's design.
func checkCommitsPerPosting(t *T) error {
	s, up, err := t.coreDownScenario(1_000_000_000)
	if err != nil {
		return err
	}
	defer up()
	want := owed{}
	first, last, err := t.paymentsInRounds(s, want, paceTransfers)
	if err != nil {
		return err
	}
	story := []string{fmt.Sprintf("the core ledger is down for %d transfers, %d at a time (%s … %s); then it comes back, and nothing else writes while the outbox drains",
		len(want), paceClients, first, last)}
	before, err := t.Lab().Outbox(t.ctx)
	if err != nil {
		return err
	}
	up()
	if _, err := t.Drained(drainWithin); err != nil {
		return err
	}
	after, err := t.Lab().Outbox(t.ctx)
	if err != nil {
		return err
	}
	commits := after.OutboxCommits - before.OutboxCommits
	story = append(story, fmt.Sprintf("the server committed %d transactions that changed outbox rows while the relay settled %d postings", commits, len(want)))
	if err := t.postedOnce(strings.Join(story, "\n"), s, want); err != nil {
		return err
	}
	if most := int64(len(want) / postingsPerCommit); commits > most {
		return t.Fail(strings.Join(story, "\n"),
			fmt.Sprintf("%d commits for %d postings: %.1f a posting", commits, len(want), float64(commits)/float64(len(want))),
			fmt.Sprintf("at most %d commits (one for every %d postings): the rows the core acknowledged in a batch marked sent together, in one transaction", most, postingsPerCommit))
	}
	return nil
}

// paymentsInRounds makes n transfers paceClients at a time, each round
// through paymentsAtOnce, and returns the first and the last as story
// lines, or a failure.
func (t *T) paymentsInRounds(s Scenario, want owed, n int) (first, last string, err error) {
	for made := 0; made < n; made += paceClients {
		f, l, err := t.paymentsAtOnce(s, want, min(paceClients, n-made))
		if err != nil {
			return "", "", err
		}
		if first == "" {
			first = f
		}
		last = l
	}
	return first, last, nil
}

// paymentsAtOnce makes n transfers at once, behind a barrier, each under a
// fresh key: A pays from its first account to B's first, and B from its
// second to A's second, by turns, so that no two of A's and B's
// transactions share an account's row and they run side by side. It
// checks that each executes, books them, adds what they owe the core to
// want, and returns the first and the last as story lines, or a failure.
func (t *T) paymentsAtOnce(s Scenario, want owed, n int) (first, last string, err error) {
	ops := make([]string, n)
	amounts := make([]int64, n)
	payers := make([]bank.Customer, n)
	froms, tos := make([]string, n), make([]string, n)
	for i := range ops {
		ops[i], amounts[i] = t.Op(), t.Amount(1_000, 50_000)
		payers[i], froms[i], tos[i] = s.A, s.A.Accounts[0], s.B.Accounts[0]
		if i%2 == 1 {
			payers[i], froms[i], tos[i] = s.B, s.B.Accounts[1], s.A.Accounts[1]
		}
		s.Books.Expect(ops[i])
	}
	reqs := make([]Request, n)
	rs := t.Simultaneously(n, func(i int) Request {
		reqs[i] = Transfer(payers[i], t.Key(), TransferBody(froms[i], tos[i], amounts[i], ops[i]))
		return reqs[i]
	})
	for i, r := range rs {
		line := reqs[i].String() + "  →  " + r.Short()
		if first == "" {
			first = line
		}
		last = line
		const executes = "201 Created: the transfer executes, whatever the core ledger is doing"
		if !toldRan(r, ops[i]) || resourceID(r) == "" {
			return "", "", t.Fail(line, r.String(), executes)
		}
		// Told that it ran in another 2xx naming its op and transfer: a
		// contract difference, and the posting is judged as for a 201.
		if !r.Is(201, "") {
			t.Differ(line, r.String(), executes)
		}
		s.Books.Transfer(ops[i], froms[i], tos[i], amounts[i])
		id := resourceID(r)
		want[id] = core.Posting{TransferID: id, From: froms[i], To: tos[i], Amount: amounts[i]}
	}
	return first, last, nil
}
