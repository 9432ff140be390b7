package labctl

import (
	"context"
	"net/http"
	"strconv"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/problem"
	"idemlab/kit/respond"
)

// handleTransfers lists the executed transfers, the operation that made
// each and its amount, a page at a time (GET
// /lab/transfers?after=ID&limit=N, in the order of their ids): the replay
// reconciles the core ledger's postings with it, a page of a thousand
// transfers where one read each cost a request, and tells an edit's
// execution from its original's by the amount.
func (c *Controller) handleTransfers(w http.ResponseWriter, r *http.Request) {
	servePage(w, r, "transfers", c.Bank.TransferOps)
}

// handleDeposits lists the executed deposits as handleTransfers lists
// transfers (GET /lab/deposits?after=ID&limit=N): the replay tells a
// deposit's edit from its original by the amount, as a transfer's.
func (c *Controller) handleDeposits(w http.ResponseWriter, r *http.Request) {
	servePage(w, r, "deposits", c.Bank.DepositOps)
}

// servePage answers a page of list under member, after the query's after
// and at most its limit (bank.MaxListed without one). A limit that is not
// a number in 1..bank.MaxListed is refused with 400 invalid-request, as
// list refuses a cursor that is not an id of its kind.
func servePage(w http.ResponseWriter, r *http.Request, member string, list func(ctx context.Context, after string, limit int) ([]bank.Executed, error)) {
	limit := bank.MaxListed
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > bank.MaxListed {
			problem.Write(w, problem.New(problem.InvalidRequest, "limit must be 1..%d, got %q", bank.MaxListed, v))
			return
		}
		limit = n
	}
	page, err := list(r.Context(), r.URL.Query().Get("after"), limit)
	if err != nil {
		problem.Write(w, err)
		return
	}
	respond.JSON(w, http.StatusOK, map[string]any{member: page})
}

// handleOutbox answers GET /lab/outbox: the outbox's counts and its dead
// letters, as GET /lab/state has them, without the rest of the state.
func (c *Controller) handleOutbox(w http.ResponseWriter, r *http.Request) {
	outbox, err := c.Outbox(r.Context())
	if err != nil {
		problem.Write(w, err)
		return
	}
	respond.JSON(w, http.StatusOK, outbox)
}

// handleRedrive is POST /lab/outbox/redrive: {"transfer_id"} names the
// dead letter to send again (bank.Redrive), once its cause is fixed. It
// publishes a "redrive" event with the dead letter as it was: without
// it, a dashboard sees the row owed again and then sent, and no word of
// the operator who made it so.
func (c *Controller) handleRedrive(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TransferID string `json:"transfer_id"`
	}
	if err := decodeOptional(r, &in); err != nil {
		problem.Write(w, err)
		return
	}
	if in.TransferID == "" {
		problem.Write(w, problem.New(problem.InvalidRequest, "transfer_id: name the transfer whose dead letter to send again (GET /lab/outbox lists them)"))
		return
	}
	d, err := c.Bank.Redrive(r.Context(), in.TransferID)
	if err != nil {
		problem.Write(w, err)
		return
	}
	c.Hub.Publish(events.KindRedrive, d)
	respond.JSON(w, http.StatusOK, map[string]any{"redriven": d})
}
