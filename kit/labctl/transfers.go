package labctl

import (
	"net/http"
	"strconv"

	"idemlab/kit/bank"
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
	limit := bank.MaxTransferOps
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > bank.MaxTransferOps {
			problem.Write(w, problem.New(problem.InvalidRequest, "limit must be 1..%d, got %q", bank.MaxTransferOps, v))
			return
		}
		limit = n
	}
	page, err := c.Bank.TransferOps(r.Context(), r.URL.Query().Get("after"), limit)
	if err != nil {
		problem.Write(w, err)
		return
	}
	respond.JSON(w, http.StatusOK, map[string]any{"transfers": page})
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
