package replay_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
	sol6 "idemlab/solutions/stage6"
)

// TestReplay_PaceStartsOneOperationPerTick: with a Pace, an operation
// starts only after a tick, so no more operations are ever done than
// ticks sent, and the day takes exactly one tick per operation (and per
// late retry). A replay that ignored its Pace would finish operations
// the ticks never let start; one that took two ticks per start would
// leave the sender blocked and the day unfinished.
func TestReplay_PaceStartsOneOperationPerTick(t *testing.T) {
	p := dayplan.DefaultParams(5, 30)
	p.LateRetryRate = 0.1
	plan, err := dayplan.Generate(5, p)
	if err != nil {
		t.Fatal(err)
	}
	starts := len(plan.Ops)
	for _, op := range plan.Ops {
		if op.Fate.LateRetry {
			starts++
		}
	}
	ticks := make(chan time.Time)
	var mu sync.Mutex
	sent := 0
	finished := make(chan struct{})
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		for {
			mu.Lock()
			sent++ // counted before the send: the operation it lets start may finish at once
			mu.Unlock()
			select {
			case ticks <- time.Time{}:
			case <-finished:
				mu.Lock()
				sent-- // this one was never taken
				mu.Unlock()
				return
			}
		}
	}()
	var ahead []int
	opts := replay.Options{Clients: 4, Pace: replay.PaceOf(ticks), Progress: func(done, total int) {
		mu.Lock()
		if done > sent {
			ahead = append(ahead, done)
		}
		mu.Unlock()
	}}
	run, err := replay.InProcess(context.Background(), sol6.New, plan, nil, opts)
	close(finished)
	<-senderDone
	if err != nil {
		t.Fatal(err)
	}
	if len(ahead) > 0 {
		t.Errorf("operations done before their ticks were sent: %v", ahead)
	}
	if sent != starts {
		t.Errorf("%d ticks taken for %d operations and late retries", sent, starts)
	}
	if rc := replay.ReconcileDay(run.Result); !rc.Valid {
		t.Errorf("a paced day of solution 6 does not reconcile: %+v", rc.Counts)
	}
}

// TestNewPace: no rate means no pacing.
func TestNewPace(t *testing.T) {
	if replay.NewPace(0) != nil || replay.NewPace(-1) != nil {
		t.Error("NewPace of no rate must be nil: as fast as possible")
	}
}
