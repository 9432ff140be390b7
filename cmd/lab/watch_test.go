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

type seqRunner struct {
	outcomes *[]studentloop.Outcome
	ran      chan struct{}
}

func (s seqRunner) Run(ctx context.Context, stage int) (studentloop.Outcome, error) {
	o := (*s.outcomes)[0]
	if len(*s.outcomes) > 1 {
		*s.outcomes = (*s.outcomes)[1:]
	}
	o.Stage = stage
	// A run the test no longer waits for (a second file event of one
	// save) must not block the watch from ending.
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

// TestWatch_RunsTheFirstFailingCheckAloneFirst: after a save, the watch
// says at once whether the check that failed first still fails, then
// runs every check. S1.missing-key passing alone is not recorded: lab
// status follows every check's run, which fails on S1.sequential-retry.
// A report the check run alone printed is not printed again. A watch
// that recorded the lone check, or waited for every check, fails.
func TestWatch_RunsTheFirstFailingCheckAloneFirst(t *testing.T) {
	root := fakeLoop(t, failingS1, "")
	r := scriptedRunner{ran: make(chan string), answers: make(chan studentloop.Outcome)}
	newRunner = func(string, string, string, bool) studentloop.Runner { return r }
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int)
	go func() { done <- run(ctx, []string{"watch", "1", "--quiet", "5ms"}, out, out) }()
	step := func(want string, answer studentloop.Outcome) {
		t.Helper()
		if got := <-r.ran; got != want {
			t.Fatalf("ran %q, want %q", got, want)
		}
		r.answers <- answer
	}
	sequential := studentloop.CheckResult{ID: "S1.sequential-retry", Report: "FAIL S1.sequential-retry  a retry gets the first answer"}
	failingLater := studentloop.Outcome{Seed: "8", Checks: []studentloop.CheckResult{{ID: "S0.happy-path", Passed: true}, {ID: "S1.missing-key", Passed: true}, sequential}}
	step("every check", failingS1)
	os.WriteFile(filepath.Join(root, "stages/stage1/keys.go"), []byte("package stage1 // fixed\n"), 0o644)
	step("S1.missing-key", studentloop.Outcome{Checks: []studentloop.CheckResult{{ID: "S1.missing-key", Passed: true}}})
	waitOutput(t, out, "✓ S1.missing-key passes now")
	if _, status, _ := runLabCommand(t, "status"); strings.Contains(status, "✓ 1") {
		t.Fatalf("the check run alone was recorded:\n%s", status)
	}
	step("every check", failingLater)
	waitOutput(t, out, "first failing: S1.sequential-retry")
	os.WriteFile(filepath.Join(root, "stages/stage1/keys.go"), []byte("package stage1 // again\n"), 0o644)
	step("S1.sequential-retry", studentloop.Outcome{Checks: []studentloop.CheckResult{sequential}})
	waitOutput(t, out, "✗ S1.sequential-retry still fails")
	step("every check", failingLater)
	waitOutput(t, out, "S1.sequential-retry's report is above")
	cancel()
	<-done
	if text := out.String(); strings.Count(text, sequential.Report) != 2 {
		t.Errorf("want S1.sequential-retry's report once after each save:\n%s", text)
	}
	_, status, _ := runLabCommand(t, "status")
	if !strings.Contains(status, "S1.sequential-retry") {
		t.Fatalf("status does not follow every check's run:\n%s", status)
	}
}

// scriptedRunner says on ran what it was asked to run ("every check", or
// the ID of a check run alone) and answers with what the test sends.
type scriptedRunner struct {
	ran     chan string
	answers chan studentloop.Outcome
}

func (s scriptedRunner) Run(ctx context.Context, stage int) (studentloop.Outcome, error) {
	var o studentloop.Outcome
	if err := s.ask(ctx, "every check", &o); err != nil {
		return o, err
	}
	o.Stage = stage
	return o, nil
}

func (s scriptedRunner) RunCheck(ctx context.Context, stage int, id string) (studentloop.Outcome, error) {
	var o studentloop.Outcome
	if err := s.ask(ctx, id, &o); err != nil {
		return o, err
	}
	o.Stage, o.Only = stage, id
	return o, nil
}

// ask says what is run and waits for the test's answer, or for the watch
// to end (a run the test no longer waits for must not block it).
func (s scriptedRunner) ask(ctx context.Context, what string, o *studentloop.Outcome) error {
	select {
	case s.ran <- what:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case *o = <-s.answers:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
