// Package day measures a whole day of faults: a plan from lab gen,
// replayed against the final solution (stage 9) in this process through
// every failure point and reconciled, as lab replay --stage 9 --solution
// does: with a core ledger outside the server, whose postings are
// reconciled too once the outbox has drained. Each round must reconcile
// (VALID); it reports the day's seconds and operations per second, and
// of those seconds the ones after the last operation's answer (the late
// retries, the outbox's drain, the core's reconciliation and the
// server's close).
//
// Run it with make bench-day (OPS= and SEED= change the day, CLIENTS= how
// many of its operations run at once);
// docs/benchmarks.md has the figures.
package day

import (
	"context"
	"flag"
	"testing"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
	"idemlab/kit/server"
	"idemlab/solutions/stage9"
)

var (
	opsFlag  = flag.Int("ops", 100_000, "operations in the day")
	seedFlag = flag.Uint64("seed", 7, "the day's seed (lab gen --seed)")
	// clientsFlag is how many operations run at once. lab replay runs one
	// at a time by default, so that the same day ends the same way every
	// time (who runs out of money when); a day's customers do not wait
	// for one another, and with a few at once the day must still
	// reconcile, however its operations interleave.
	clientsFlag = flag.Int("clients", 4, "operations at once (lab replay --clients)")
)

func BenchmarkDay(b *testing.B) {
	plan, err := dayplan.Generate(*seedFlag, dayplan.DefaultParams(*seedFlag, *opsFlag))
	if err != nil {
		b.Fatal(err)
	}
	var tail time.Duration
	for b.Loop() {
		_, coreURL, stopCore, err := server.StartCore(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		var lastAnswered time.Time
		run, err := replay.InProcess(context.Background(), stage9.New, plan, nil, replay.Options{
			CoreURL: coreURL,
			Clients: *clientsFlag,
			Progress: func(done, total int) {
				if done == total {
					lastAnswered = time.Now()
				}
			},
		})
		tail += time.Since(lastAnswered)
		stopCore()
		if err != nil {
			b.Fatal(err)
		}
		if rc := replay.ReconcileDay(run.Result); !rc.Valid {
			b.Fatalf("the day does not reconcile: %+v", rc.Counts)
		}
	}
	perDay := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perDay, "s/day")
	b.ReportMetric(float64(len(plan.Ops))/perDay, "ops/s")
	b.ReportMetric(tail.Seconds()/float64(b.N), "s-after-last-op/day")
	b.ReportMetric(float64(*clientsFlag), "clients")
}
