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
	for _, r := range p.Rates() {
		in.Float64Var(r.Value, r.Flag, *r.Value, r.Help)
	}
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
