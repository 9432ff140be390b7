package core

import (
	"encoding/json"
	"errors"
	"net/http"

	"idemlab/kit/idemkey"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/respond"
)

// Member is one posting of a batch, as POST /postings/batch takes it: the
// Idempotency-Key it is posted under, and the posting.
type Member struct {
	Key     string  `json:"key"`
	Posting Posting `json:"posting"`
}

// Result is the core's answer to one posting of a batch: what POST
// /postings would have answered had the posting been sent alone under its
// key, in the batch's place. Status is 201 (posted), 200 (posted before
// under the key: Replayed, the Idempotent-Replayed header of a single
// answer) or the refusal's; Body is the receipt, or the problem.
type Result struct {
	Status   int             `json:"status"`
	Replayed bool            `json:"replayed,omitempty"`
	Body     json.RawMessage `json:"body"`
}

// postBatch serves POST /postings/batch: a JSON array of members
// {"key","posting"} answered with 200 and one Result per member, in
// order. The batch is applied as if its postings had been sent one after
// another in its order, in one transaction (written in the order of their
// keys, see settle): the same key twice is a replay of the first (or,
// with another posting, idempotency-key-reused).
// A member refused is refused alone. Refused whole, with one problem and
// nothing posted: a request without the token (401), one while the core
// is down (503), a body that is not a batch (400 invalid-batch, 413, 415)
// and a core that cannot read its books or write (500).
func (c *Core) postBatch(w http.ResponseWriter, r *http.Request) {
	down, ok, done := c.Faults.wait(r.Context())
	defer done()
	if !ok || c.refuseToken(w) {
		return
	}
	if c.Faults.silences() {
		silent(r)
	}
	if c.Faults.drops() {
		// Nothing of the batch applied, and no answer.
		panic(http.ErrAbortHandler)
	}
	c.Faults.cutsBatch(r)
	members, err := request.PostingBatch(r)
	if c.Faults.refuseDown(down, max(len(members), 1)) {
		problem.Write(w, problem.New(Down, "the core ledger is down; nothing of the batch was posted"))
		return
	}
	if errors.Is(err, problem.InvalidRequest) {
		err = problem.New(InvalidBatch, "%s; nothing was posted", problem.From(err).Detail)
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	entries := make([]*entry, len(members))
	for i, m := range members {
		entries[i] = c.member(i, m)
	}
	if err := c.settle(r.Context(), entries); err != nil {
		problem.Write(w, err)
		return
	}
	acked := 0
	results := make([]Result, len(entries))
	for i, e := range entries {
		results[i] = e.result()
		if e.acked() {
			acked++
		}
	}
	if c.Faults.losesAnswer(acked) {
		// Applied, and the answer never arrives: the caller cannot tell
		// this from a batch that was not applied.
		panic(http.ErrAbortHandler)
	}
	respond.JSON(w, http.StatusOK, results)
}

// member reads member i of a batch as POST /postings reads a posting
// alone: refused for now while the core flaps, then its key, then its
// posting.
func (c *Core) member(i int, m request.BatchMember) *entry {
	e := &entry{}
	not := c.Faults.flaps()
	switch {
	case not != nil:
		e.err = problem.New(not, "not now; nothing was posted")
	case m.Key == nil:
		e.err = problem.New(problem.MissingIdempotencyKey, "batch[%d] has no key; send the same key on every send of one posting", i)
	case json.Unmarshal(m.Key, &e.key) != nil:
		e.err = problem.New(problem.InvalidIdempotencyKey, "the key of batch[%d] must be a string", i)
	default:
		e.err = idemkey.Check(e.key)
	}
	if e.err != nil {
		return e
	}
	if m.Posting == nil {
		e.err = problem.New(InvalidPosting, "batch[%d] has no posting; nothing was posted", i)
		return e
	}
	req, err := request.PostingJSON(m.Posting)
	e.posting, e.err = Posting(req), postingProblem(err)
	return e
}

// result is e's answer as a member of a batch.
func (e *entry) result() Result {
	if e.err != nil {
		status, body := problem.Marshal(e.err)
		return Result{Status: status, Body: trimNewline(body)}
	}
	body, _ := respond.Marshal(e.receipt)
	if e.replayed {
		return Result{Status: http.StatusOK, Replayed: true, Body: trimNewline(body)}
	}
	return Result{Status: http.StatusCreated, Body: trimNewline(body)}
}

// trimNewline drops the newline that ends a body sent alone.
func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}
