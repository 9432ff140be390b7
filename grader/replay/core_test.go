package replay

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"idemlab/grader/dayplan"
	"idemlab/kit/bank"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
)

// booksDay is three transfers, op-1 an invoice that op-3 pays again,
// with what the server executed: op-1 once during the day and again
// after retention, op-2 and op-3 once.
func booksDay(t *testing.T) *Result {
	t.Helper()
	op := func(n, ref, repays string) dayplan.Op {
		body, err := json.Marshal(bank.TransferRequest{From: "a", To: "b", Amount: 1000, Reference: ref})
		if err != nil {
			t.Fatal(err)
		}
		return dayplan.Op{Op: n, Customer: "c", Endpoint: dayplan.Transfers, Body: body, Amount: 1000, Reference: ref, Repays: repays}
	}
	plan := &dayplan.Plan{Ops: []dayplan.Op{op("op-1", "INV-1", ""), op("op-2", "", ""), op("op-3", "INV-1", "op-1")}}
	return &Result{Plan: plan,
		Day:   labctl.State{Executions: map[string]int64{"op-1": 1, "op-2": 1, "op-3": 1}},
		Final: labctl.State{Executions: map[string]int64{"op-1": 2, "op-2": 1, "op-3": 1}},
	}
}

// TestReconcileDay_InvoicesAndCore: an invoice paid by two operations
// and by a late retry after its key expired is one invoice paid three
// times, not a late re-execution; against the core, an execution with no
// posting, a transfer posted twice and a posting of a transfer the bank
// does not have are each counted, and without a core none is. It catches
// a reconciliation that counts payments per operation (op-1 and op-3 are
// each executed once during the day), or postings per posting instead of
// per transfer.
func TestReconcileDay_InvoicesAndCore(t *testing.T) {
	res := booksDay(t)
	rc := ReconcileDay(res)
	c := rc.Counts
	if c.InvoicesPaidTwice != 1 || c.MoneyPaidTwice != 2000 || c.LateReexecuted != 0 || rc.Invoices != 2 || rc.CoreReconciled || rc.Valid {
		t.Errorf("without a core: %+v, %d invoices, valid %v; want 1 invoice paid twice, 2,000 won paid again", c, rc.Invoices, rc.Valid)
	}
	res.Core = &CoreBooks{Transfers: []CoreTransfer{
		{ID: "tr_1", Op: "op-1", Postings: 2},
		{ID: "tr_2", Op: "op-2", Postings: 1},
		{ID: "tr_x", Postings: 1},
	}}
	c = ReconcileDay(res).Counts
	// op-1 executed twice and posted once; op-3 never posted.
	if c.NotPosted != 2 || c.PostedTwice != 1 || c.PostedUnexecuted != 1 {
		t.Errorf("with a core: not posted %d, posted twice %d, posted unexecuted %d; want 2, 1, 1", c.NotPosted, c.PostedTwice, c.PostedUnexecuted)
	}
}

// TestReconcileDay_DeadLetterNamed: a transfer the relay set aside as a
// dead letter is counted as not posted, and its finding names it with the
// core's answer; one never posted and never set aside says only that the
// core never heard of it. It catches a reconciliation that let a dead
// letter pass as posted, or lost its name.
func TestReconcileDay_DeadLetterNamed(t *testing.T) {
	res := booksDay(t)
	res.Core = &CoreBooks{
		Transfers:   []CoreTransfer{{ID: "tr_1", Op: "op-1", Postings: 2}},
		DeadLetters: []CoreDeadLetter{{ID: "tr_2", Op: "op-2", Status: 422, Answer: `{"type":"/problems/posting-rejected"}`}},
	}
	rc := ReconcileDay(res)
	if rc.Counts.NotPosted != 3 {
		t.Errorf("not posted %d, want 3 (op-1's second execution, op-2, a dead letter, and op-3)", rc.Counts.NotPosted)
	}
	stories := map[string]string{}
	for _, f := range rc.Findings {
		if f.Kind == "not_posted" {
			stories[f.Op] = f.Story
		}
	}
	if s := stories["op-2"]; !strings.Contains(s, "dead letter") || !strings.Contains(s, "tr_2") || !strings.Contains(s, "posting-rejected") {
		t.Errorf("op-2's finding %q does not name its dead letter and the core's answer", s)
	}
	if s := stories["op-3"]; strings.Contains(s, "dead letter") {
		t.Errorf("op-3's finding %q names a dead letter it does not have", s)
	}
}

// TestReadExecuted_ReadsEveryPage: the replay reads the bank's transfers
// and deposits a page at a time until a short page, each page after the
// last id of the one before, and refuses a server that lists an execution
// twice instead of asking for ever. It catches a reader that stops after
// the first page, one that asks for the same page again, one that never
// ends, and one that reads one listing for the other.
func TestReadExecuted_ReadsEveryPage(t *testing.T) {
	ids := map[string][]string{
		"transfers": {"tr_a", "tr_b", "tr_c", "tr_d", "tr_e"},
		"deposits":  {"dp_a", "dp_b", "dp_c"},
	}
	var repeat atomic.Bool // the server lists its first page whatever it is asked
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		member := strings.TrimPrefix(req.URL.Path, "/lab/")
		limit, _ := strconv.Atoi(req.URL.Query().Get("limit"))
		page := []bank.Executed{}
		for _, id := range ids[member] {
			if (repeat.Load() || id > req.URL.Query().Get("after")) && len(page) < limit {
				page = append(page, bank.Executed{ID: id, Op: "op-" + id})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{member: page})
	}))
	defer hs.Close()
	lab := labclient.New(hs.URL, "admin", hs.Client())
	lists := map[string]func(context.Context, string, int) ([]bank.Executed, error){"transfers": lab.TransferOps, "deposits": lab.DepositOps}
	for what, list := range lists {
		for _, page := range []int{2, 5, 1000} {
			ops, err := readExecuted(t.Context(), what, page, list)
			if err != nil || len(ops) != len(ids[what]) {
				t.Errorf("%s in pages of %d: %v, %v; want every one of %v", what, page, ops, err, ids[what])
			}
			for _, id := range ids[what] {
				if ops[id].Op != "op-"+id {
					t.Errorf("%s in pages of %d: %s made by %q, want op-%s", what, page, id, ops[id].Op, id)
				}
			}
		}
	}
	repeat.Store(true)
	for what, list := range lists {
		if _, err := readExecuted(t.Context(), what, 2, list); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("a server that repeats its first page of %s: %v, want an error", what, err)
		}
	}
}
