// Package day measures a whole day of faults: a plan from lab gen,
// replayed against the final solution (stage 6) in this process through
// every failure point and reconciled, as lab replay --solution does. Each
// round must reconcile (VALID); it reports the day's seconds and
// operations per second.
//
// Run it with make bench-day (OPS= and SEED= change the day);
// docs/benchmarks.md has the figures.
package day

import (
	"context"
	"flag"
	"testing"

	"idemlab/grader"
	"idemlab/grader/dayplan"
	"idemlab/solutions/stage6"
)

var (
	opsFlag  = flag.Int("ops", 100_000, "operations in the day")
	seedFlag = flag.Uint64("seed", 7, "the day's seed (lab gen --seed)")
)

func BenchmarkDay(b *testing.B) {
	plan, err := dayplan.Generate(*seedFlag, dayplan.DefaultParams(*seedFlag, *opsFlag))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		run, err := grader.ReplayInProcess(context.Background(), stage6.New, plan, nil, grader.ReplayOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if rc := grader.ReconcileDay(run.Result); !rc.Valid {
			b.Fatalf("the day does not reconcile: %+v", rc.Counts)
		}
	}
	perDay := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perDay, "s/day")
	b.ReportMetric(float64(len(plan.Ops))/perDay, "ops/s")
}
