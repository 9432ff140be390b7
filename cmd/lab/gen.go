package main

import (
	"context"
	"fmt"
	"os"

	"idemlab/grader/dayplan"
)

func runGen(ctx context.Context, in *invocation) error {
	seed := in.Uint64("seed", 1, "the seed; the same seed gives the same plan, byte for byte")
	ops := in.Int("ops", 1000, "how many logical operations the day has")
	out := in.String("o", "", "write the plan to this file (default: standard output)")
	p := dayplan.DefaultParams(0, 0)
	in.IntVar(&p.Reset.Customers, "customers", p.Reset.Customers, "customers in the lab reset")
	in.IntVar(&p.Reset.AccountsPerCustomer, "accounts", p.Reset.AccountsPerCustomer, "accounts per customer")
	in.Int64Var(&p.Reset.OpeningBalance, "opening-balance", p.Reset.OpeningBalance, "each account's opening balance in won")
	in.Float64Var(&p.FaultRate, "fault-rate", p.FaultRate, "share of operations whose first attempt meets a failure point")
	in.Float64Var(&p.RespellRate, "respell-rate", p.RespellRate, "share of retried operations whose retries spell the body differently")
	in.Float64Var(&p.DoubleClickRate, "double-click-rate", p.DoubleClickRate, "share of operations double-clicked")
	in.Float64Var(&p.EditRate, "edit-rate", p.EditRate, "share of operations a clerk resubmits with the same key and an edited amount")
	in.Float64Var(&p.LateRetryRate, "late-rate", p.LateRetryRate, "share of operations retried after the retention period")
	in.Float64Var(&p.DepositRate, "deposit-rate", p.DepositRate, "share of operations that are deposits")
	in.Float64Var(&p.KeylessRate, "keyless-rate", p.KeylessRate, "share of operations sent once without an Idempotency-Key (stage 1 on refuses them)")
	in.Float64Var(&p.SharedKeyRate, "shared-key-rate", p.SharedKeyRate, "share of operations sent with an earlier operation's key of another customer (a bad key generator; stage 5 scopes keys to the customer)")
	in.Float64Var(&p.CrashRate, "crash-rate", p.CrashRate, "share of operations before which the replay arms a crash point of the server (stage 6's leases recover from it)")
	in.Float64Var(&p.InvoiceRate, "invoice-rate", p.InvoiceRate, "share of transfers that pay an invoice: they carry a reference (stage 8 pays each reference once)")
	in.Float64Var(&p.RepayRate, "repay-rate", p.RepayRate, "share of operations that pay again, under a new key, an invoice their customer already paid (stage 8 refuses them)")
	in.Float64Var(&p.SettingsEditRate, "settings-edit-rate", p.SettingsEditRate, "share of operations that are two clerks editing an account's settings, one from a stale copy (stage 7's If-Match keeps both changes)")
	if done, err := in.parse(); done {
		return err
	}
	p.Ops = *ops
	plan, err := dayplan.Generate(*seed, p)
	if err != nil {
		return cannotRun(err)
	}
	if *out == "" {
		return plan.Write(in.stdout)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := plan.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(in.stderr, "wrote %s: %d operations, seed %d (%s)\n", *out, len(plan.Ops), *seed, summarise(plan))
	return nil
}

// summarise counts a plan's fates in one line.
func summarise(plan *dayplan.Plan) string {
	var faulted, doubles, edits, late, respelled, invoices, again, settings int
	for _, op := range plan.Ops {
		if op.Reference != "" {
			invoices++
		}
		if op.Repays != "" {
			again++
		}
		if op.SettingsEdit != nil {
			settings++
		}
		if len(op.Fate.Faults) > 0 {
			faulted++
		}
		if op.Fate.DoubleClick {
			doubles++
		}
		if op.Fate.EditedAmount != 0 {
			edits++
		}
		if op.Fate.LateRetry {
			late++
		}
		if op.Fate.RetryBody != "" {
			respelled++
		}
	}
	s := fmt.Sprintf("%d meet failure points, %d respelled retries, %d double clicks, %d edited resubmissions, %d late retries",
		faulted, respelled, doubles, edits, late)
	if invoices+again+settings > 0 {
		s += fmt.Sprintf(", %d invoice payments (%d paying an invoice again), %d settings edits", invoices, again, settings)
	}
	return s
}
