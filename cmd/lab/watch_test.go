package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"idemlab/studentloop"
)

// TestWatch_ShowsTheFirstFailingCheckThenGreen: the watch prints the
// first failing check, and after a save that makes the stage pass, its
// green line; lab status follows. The runner answers failing first, then
// passing, and says on a channel when it ran.
func TestWatch_ShowsTheFirstFailingCheckThenGreen(t *testing.T) {
	root := fakeLoop(t, failingS1, "")
	ran := make(chan struct{}, 2)
	outcomes := []studentloop.Outcome{failingS1, passingS1}
	newRunner = func(string, string, string, bool) studentloop.Runner {
		return seqRunner{outcomes: &outcomes, ran: ran}
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int)
	go func() { done <- run(ctx, []string{"watch", "1", "--quiet", "5ms"}, out, out) }()
	<-ran
	os.WriteFile(filepath.Join(root, "stages/stage1/keys.go"), []byte("package stage1 // fixed\n"), 0o644)
	<-ran
	waitOutput(t, out, "✓ stage 1 passes")
	cancel()
	<-done
	text := out.String()
	if !strings.Contains(text, "first failing: S1.missing-key") || !strings.Contains(text, "after the save") {
		t.Fatalf("%s", text)
	}
	_, status, _ := runLabCommand(t, "status")
	if !strings.Contains(status, "✓ 1") {
		t.Fatalf("status:\n%s", status)
	}
}

// TestWatch_ACheckThatCouldNotRunIsNoFailure: when the one check that
// did not pass could not run, the watch prints its block and says it says
// nothing of the server; it sends the student to no hint. A watch that
// printed an empty report and "make hint" fails.
func TestWatch_ACheckThatCouldNotRunIsNoFailure(t *testing.T) {
	fakeLoop(t, couldNotRunS1, "")
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int)
	go func() { done <- run(ctx, []string{"watch", "1", "--quiet", "5ms"}, out, out) }()
	waitOutput(t, out, "once that is fixed")
	cancel()
	<-done
	text := out.String()
	if !strings.Contains(text, "? stage 1: 0 of 2 pass; 2 could not run, first S0.happy-path") ||
		!strings.Contains(text, "COULD NOT RUN S1.missing-key") || strings.Contains(text, "make hint") {
		t.Fatalf("%s", text)
	}
}

type seqRunner struct {
	outcomes *[]studentloop.Outcome
	ran      chan struct{}
}

func (s seqRunner) Run(ctx context.Context, stage int, each func(studentloop.CheckResult)) (studentloop.Outcome, error) {
	o := (*s.outcomes)[0]
	if len(*s.outcomes) > 1 {
		*s.outcomes = (*s.outcomes)[1:]
	}
	o.Stage = stage
	// A run the test no longer waits for must not block the watch from
	// ending.
	select {
	case s.ran <- struct{}{}:
	case <-ctx.Done():
	}
	return o, nil
}

// waitOutput waits for the watch to print want; the deadline only keeps
// a broken watch from hanging the suite.
func waitOutput(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		text, more := b.next()
		if strings.Contains(text, want) {
			return
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no %q in\n%s", want, b.String())
		}
	}
}

// TestWatch_AnswersTheCheckBeingFixedFirst: after a save, the watch says
// whether the check that failed first still fails as soon as that check
// ends, while the others run; then the run's line. S1.missing-key
// passing is not recorded alone: lab status follows the whole run, which
// fails on S1.sequential-retry. A report printed as its check ended is
// not printed again. A watch that waited for every check before saying
// anything, or recorded one check's outcome, fails.
func TestWatch_AnswersTheCheckBeingFixedFirst(t *testing.T) {
	root := fakeLoop(t, failingS1, "")
	r := scriptedRunner{ran: make(chan struct{}), answers: make(chan studentloop.Outcome), ended: make(chan struct{})}
	newRunner = func(string, string, string, bool) studentloop.Runner { return r }
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int)
	go func() { done <- run(ctx, []string{"watch", "1", "--quiet", "5ms"}, out, out) }()
	// step answers a run: its checks end one by one, the run's end waits
	// for the test's word.
	step := func(answer studentloop.Outcome) {
		t.Helper()
		<-r.ran
		r.answers <- answer
	}
	sequential := studentloop.CheckResult{ID: "S1.sequential-retry", Report: "FAIL S1.sequential-retry  a retry gets the first answer"}
	failingLater := studentloop.Outcome{Seed: "8", Checks: []studentloop.CheckResult{{ID: "S0.happy-path", Passed: true}, {ID: "S1.missing-key", Passed: true}, sequential}}
	step(failingS1)
	r.ended <- struct{}{}
	waitOutput(t, out, "first failing: S1.missing-key")
	os.WriteFile(filepath.Join(root, "stages/stage1/keys.go"), []byte("package stage1 // fixed\n"), 0o644)
	step(failingLater)
	waitOutput(t, out, "✓ S1.missing-key passes now")
	if _, status, _ := runLabCommand(t, "status"); strings.Contains(status, "S1.sequential-retry") {
		t.Fatalf("recorded before the run ended:\n%s", status)
	}
	r.ended <- struct{}{}
	waitOutput(t, out, "first failing: S1.sequential-retry")
	os.WriteFile(filepath.Join(root, "stages/stage1/keys.go"), []byte("package stage1 // again\n"), 0o644)
	step(failingLater)
	waitOutput(t, out, "✗ S1.sequential-retry still fails")
	r.ended <- struct{}{}
	waitOutput(t, out, "S1.sequential-retry's report is above")
	cancel()
	<-done
	if text := out.String(); strings.Count(text, sequential.Report) != 2 {
		t.Errorf("want S1.sequential-retry's report once after each run that found it:\n%s", text)
	}
	_, status, _ := runLabCommand(t, "status")
	if !strings.Contains(status, "S1.sequential-retry") {
		t.Fatalf("status does not follow the run:\n%s", status)
	}
}

// scriptedRunner says on ran that it runs, hands each of the test's
// answer's checks to each as they end, and returns the answer when the
// test says on ended.
type scriptedRunner struct {
	ran     chan struct{}
	answers chan studentloop.Outcome
	ended   chan struct{}
}

func (s scriptedRunner) Run(ctx context.Context, stage int, each func(studentloop.CheckResult)) (studentloop.Outcome, error) {
	select {
	case s.ran <- struct{}{}:
	case <-ctx.Done():
		return studentloop.Outcome{}, ctx.Err()
	}
	var o studentloop.Outcome
	select {
	case o = <-s.answers:
	case <-ctx.Done():
		return studentloop.Outcome{}, ctx.Err()
	}
	for _, c := range o.Checks {
		if each != nil {
			each(c)
		}
	}
	select {
	case <-s.ended:
	case <-ctx.Done():
		return studentloop.Outcome{}, ctx.Err()
	}
	o.Stage = stage
	return o, nil
}
