package soak

import (
	"fmt"
	"strings"
	"testing"

	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
)

// faultClients is how many operations of the day of faults run at once.
const faultClients = 16

// TestDayOfFaults_EveryPointReconciles is S6.day-replay-through-faults
// at scale, against solution 9, the way lab replay --stage 9 --solution
// drives it: a large generated day where half the operations meet the
// seven failure points of a remote call, some several in a row, with
// double clicks, respelled retries, edited resubmissions and late
// retries, reconciled operation by operation, account by account and,
// once the outbox has drained, posting by posting in the core ledger.
func TestDayOfFaults_EveryPointReconciles(t *testing.T) {
	soakOnly(t)
	seed := soakSeed(t)
	ctx := soakContext(t)
	params := dayplan.DefaultParams(seed, *opsFlag)
	params.FaultRate, params.DoubleClickRate, params.EditRate, params.LateRetryRate = 0.5, 0.1, 0.1, 0.05
	plan, err := dayplan.Generate(seed, params)
	if err != nil {
		t.Fatal(err)
	}
	run, err := replay.InProcess(ctx, subject.New, plan, nil, replay.Options{Clients: faultClients, CoreURL: startCore(ctx, t)})
	if err != nil {
		t.Fatal(err)
	}
	rc := replay.ReconcileDay(run.Result)
	var met []string
	for _, p := range dayplan.Points {
		met = append(met, fmt.Sprintf("%s %d", p, rc.FaultsMet[p]))
		if rc.FaultsMet[p] == 0 {
			t.Errorf("no attempt met %s: the day is too small to try every failure point", p)
		}
	}
	t.Logf("day of faults (%s; lab replay --stage 9 --solution --clients %d): %d operations, %d attempts; failure points met: %s; %d executed twice, %d lost, %d mismatched replays, %d unexpected answers, %d late retries re-executed (allowed), money conserved %v; %s",
		params.Command(), faultClients, rc.Ops, rc.Attempts, strings.Join(met, ", "),
		rc.Counts.DoubleApplied, rc.Counts.LostTransfers, rc.Counts.MismatchedReplays, rc.Counts.UnexpectedStatus, rc.Counts.LateReexecuted, rc.Money.Conserved,
		coreFigures(t, run.Result, rc))
	if !rc.Valid {
		t.Errorf("the day does not reconcile:\n%s", report(rc))
	}
}
