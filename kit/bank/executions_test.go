package bank_test

import (
	"context"
	"testing"

	"idemlab/kit/bank"
)

// TestCommitted_NumbersEachRunAsItWasWritten: an execution reports the
// run it was of its op, not the op's count when its request got round to
// asking. Two requests that commit one after the other, and ask only once
// both have, are the 1st and the 2nd run, not two 2nd runs.
func TestCommitted_NumbersEachRunAsItWasWritten(t *testing.T) {
	f := setup(t, 1000)
	a, b := f.customers[0], f.customers[1]
	req := bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: 300, Metadata: map[string]string{"op": "op-1"}}
	var logs []*bank.ExecutionLog
	for range 2 {
		ctx, l := bank.WithExecutionLog(context.Background())
		tx, err := f.db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.bank.Transfer(ctx, tx, a.ID, req); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	for i, l := range logs {
		runs, err := f.bank.Committed(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].Count != int64(i+1) {
			t.Errorf("the execution of request %d reports %+v, want one run numbered %d", i+1, runs, i+1)
		}
	}
}
