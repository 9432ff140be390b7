package replay

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/judging"
	"idemlab/kit/bank"
	"idemlab/kit/core"
	"idemlab/kit/labctl"
)

// CoreBooks is what the core ledger holds at the end of a replay.
type CoreBooks struct {
	// Transfers are the transfers the core was told of, in the order of
	// their first posting.
	Transfers []CoreTransfer `json:"transfers"`
	// Pending counts the outbox rows still unsent when the replay stopped
	// waiting for the outbox to drain.
	Pending int64 `json:"pending"`
	// DeadLetters are the transfers the relay set aside because the core
	// refused them for good: not posted, and named with the core's answer.
	DeadLetters []CoreDeadLetter `json:"dead_letters,omitempty"`
}

// CoreDeadLetter is a transfer set aside as a dead letter.
type CoreDeadLetter struct {
	ID string `json:"id"`
	// Op is the operation that made the transfer.
	Op     string `json:"op,omitempty"`
	Status int    `json:"status"`
	Answer string `json:"answer"`
}

// CoreTransfer is one transfer the core was told of.
type CoreTransfer struct {
	ID string `json:"id"`
	// Op is the operation that made the transfer (its metadata.op); empty
	// when the bank has no such transfer: it was posted, and never executed.
	Op string `json:"op,omitempty"`
	// Postings counts the core's postings of it: more than one is money
	// the core moved twice.
	Postings int `json:"postings"`
}

// drainWithin is how long a day gives the relay to empty the outbox once
// its last operation is answered, as long as the checks give it: the
// relay runs at least every 20 ms, so only a stuck relay takes this long.
const drainWithin = 10 * time.Second

// readCore waits, up to drainWithin, for the server's outbox to have
// nothing left to send, then reads the core's postings at url and names
// the operation that made each posted transfer from ops, the bank's
// transfers (Result.Transfers).
func (r *replayer) readCore(ctx context.Context, url string, ops map[string]bank.Executed) (*CoreBooks, error) {
	books := &CoreBooks{}
	// The outbox alone: a day's state counts the executions of every
	// operation of the day.
	var last labctl.Outbox
	pending, err := judging.Drained(ctx, drainWithin, 20*time.Millisecond, func() (labctl.Outbox, error) {
		o, err := r.lab.Outbox(ctx)
		last = o
		return o, err
	})
	if err != nil {
		return nil, err
	}
	books.Pending = pending
	postings, err := core.NewClient(url, r.client).Postings(ctx)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	before := maps.Clone(r.postedBefore)
	for _, p := range postings {
		if before[p.TransferID] > 0 {
			before[p.TransferID]--
			continue
		}
		i, seen := index[p.TransferID]
		if !seen {
			i = len(books.Transfers)
			index[p.TransferID] = i
			books.Transfers = append(books.Transfers, CoreTransfer{ID: p.TransferID, Op: ops[p.TransferID].Op})
		}
		books.Transfers[i].Postings++
	}
	for _, d := range last.DeadLetters {
		books.DeadLetters = append(books.DeadLetters, CoreDeadLetter{ID: d.TransferID, Op: ops[d.TransferID].Op, Status: d.Status, Answer: d.Answer})
	}
	return books, nil
}

// postingsBefore counts the postings the core at url holds, by transfer:
// those of the days played before this one, which the lab's reset does
// not clear (the core is another system).
func postingsBefore(ctx context.Context, url string, hc *http.Client) (map[string]int, error) {
	postings, err := core.NewClient(url, hc).Postings(ctx)
	if err != nil {
		return nil, err
	}
	n := map[string]int{}
	for _, p := range postings {
		n[p.TransferID]++
	}
	return n, nil
}

// readExecuted reads every transfer or deposit the bank executed (what,
// in the plural), page at a time from list (the lab client's TransferOps
// or DepositOps), and returns each, with the operation that made it and
// its amount, by its id: one the bank does not have is not there. It
// returns an error if a page cannot be read, or lists an execution a page
// before it listed (a server that would list the same page for ever).
func readExecuted(ctx context.Context, what string, page int, list func(ctx context.Context, after string, limit int) ([]bank.Executed, error)) (map[string]bank.Executed, error) {
	ops := map[string]bank.Executed{}
	after := ""
	for {
		got, err := list(ctx, after, page)
		if err != nil {
			return nil, fmt.Errorf("read the bank's %s: %w", what, err)
		}
		for _, x := range got {
			if _, twice := ops[x.ID]; twice {
				return nil, fmt.Errorf("read the bank's %s: %s listed twice, again after %s", what, x.ID, after)
			}
			ops[x.ID], after = x, x.ID
		}
		if len(got) < page {
			return ops, nil
		}
	}
}

// reconcileCore compares the core's postings with the transfers the
// server executed, operation by operation: every execution of a transfer
// must be posted once. A server that posts nothing (before stage 9) leaves
// every executed transfer not posted.
func (rc *DayReconciliation) reconcileCore(res *Result) {
	books := res.Core
	posted := map[string]int64{}
	for _, t := range books.Transfers {
		switch {
		case t.Op == "":
			rc.Counts.PostedUnexecuted++
			rc.Findings = append(rc.Findings, DayFinding{Kind: "posted_unexecuted",
				Story: fmt.Sprintf("transfer %s is posted %d times in the core ledger, and the bank has no such transfer", t.ID, t.Postings)})
			continue
		case t.Postings > 1:
			rc.Counts.PostedTwice++
			rc.Findings = append(rc.Findings, DayFinding{Kind: "posted_twice", Op: t.Op,
				Story: fmt.Sprintf("transfer %s is posted %d times in the core ledger", t.ID, t.Postings)})
		}
		posted[t.Op]++
	}
	dead := map[string]CoreDeadLetter{}
	for _, d := range books.DeadLetters {
		dead[d.Op] = d
	}
	for i := range res.Plan.Ops {
		op := &res.Plan.Ops[i]
		if op.Endpoint != dayplan.Transfers {
			continue
		}
		if n := res.Final.Executions[op.Op] - posted[op.Op]; n > 0 {
			rc.Counts.NotPosted += int(n)
			story := fmt.Sprintf("executed %d times, posted %d: the core ledger never heard of %d", res.Final.Executions[op.Op], posted[op.Op], n)
			if d, ok := dead[op.Op]; ok {
				story = fmt.Sprintf("executed %d times, posted %d: transfer %s is a dead letter, refused by the core for good (%d %s)", res.Final.Executions[op.Op], posted[op.Op], d.ID, d.Status, d.Answer)
			}
			rc.Findings = append(rc.Findings, DayFinding{Kind: "not_posted", Op: op.Op, Story: story})
		}
	}
	if books.Pending > 0 {
		rc.Notes = append(rc.Notes, fmt.Sprintf("%d outbox rows were still unsent %s after the day", books.Pending, drainWithin))
	}
}
