package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/judging"
	"idemlab/kit/bank"
	"idemlab/kit/core"
	"idemlab/kit/labctl"
	"idemlab/kit/retry"
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
// nothing left to send, then reads the core's postings at url and asks
// the bank which operation made each posted transfer (GET /transfers/{id}
// as the customer whose account it came from).
func (r *replayer) readCore(ctx context.Context, url string) (*CoreBooks, error) {
	books := &CoreBooks{}
	// A day's state lists every key it made: read it less often than a
	// check does.
	var last labctl.State
	pending, err := judging.Drained(ctx, drainWithin, 20*time.Millisecond, func() (labctl.State, error) {
		st, err := r.state(ctx)
		last = st
		return st, err
	})
	if err != nil {
		return nil, err
	}
	books.Pending = pending
	postings, err := core.NewClient(url, r.client).Postings(ctx)
	if err != nil {
		return nil, err
	}
	owner := map[string]string{}
	for _, c := range r.plan.Customers() {
		for _, a := range c.Accounts {
			owner[a] = c.ID
		}
	}
	var reads []transferRead
	index := map[string]int{}
	for _, p := range postings {
		i, seen := index[p.TransferID]
		if !seen {
			i = len(books.Transfers)
			index[p.TransferID] = i
			books.Transfers = append(books.Transfers, CoreTransfer{ID: p.TransferID})
			reads = append(reads, transferRead{customer: owner[p.From], id: p.TransferID})
		}
		books.Transfers[i].Postings++
	}
	for _, d := range last.DeadLetters {
		books.DeadLetters = append(books.DeadLetters, CoreDeadLetter{ID: d.TransferID, Status: d.Status, Answer: d.Answer})
		reads = append(reads, transferRead{customer: owner[d.From], id: d.TransferID})
	}
	ops, err := r.transferOps(ctx, reads)
	if err != nil {
		return nil, err
	}
	for i := range books.Transfers {
		books.Transfers[i].Op = ops[i]
	}
	for i := range books.DeadLetters {
		books.DeadLetters[i].Op = ops[len(books.Transfers)+i]
	}
	return books, nil
}

// transferRead is a transfer to read back, as the customer who may read it.
type transferRead struct{ customer, id string }

// readersAtOnce is how many transfers transferOps reads back at once: the
// reads change nothing, so the server answers them side by side on the
// machine's other core while the replay waits on one.
const readersAtOnce = 4

// transferOps reads back every transfer of reads, readersAtOnce at a
// time, and returns the operation that made each, in the order of reads;
// the error is that of the first read, in that order, that failed.
func (r *replayer) transferOps(ctx context.Context, reads []transferRead) ([]string, error) {
	ops := make([]string, len(reads))
	errs := make([]error, len(reads))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(readersAtOnce, len(reads)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ops[i], errs[i] = r.transferOp(ctx, reads[i].customer, reads[i].id)
			}
		}()
	}
	for i := range reads {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return ops, nil
}

// transferOp reads transfer id as customer and returns the operation that
// made it; "" if the bank has no such transfer.
func (r *replayer) transferOp(ctx context.Context, customer, id string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.opts.URL+"/transfers/"+id, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+r.tokens[customer])
	ans := retry.Send(r.client, req)
	switch {
	case ans.Err != nil:
		return "", fmt.Errorf("read transfer %s: %w", id, ans.Err)
	case ans.Status == http.StatusNotFound:
		return "", nil
	case ans.Status != http.StatusOK:
		return "", fmt.Errorf("read transfer %s: %d %s", id, ans.Status, ans.Body)
	}
	var t bank.Transfer
	if err := json.Unmarshal(ans.Body, &t); err != nil {
		return "", fmt.Errorf("read transfer %s: %w", id, err)
	}
	return t.Metadata["op"], nil
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
