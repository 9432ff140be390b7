package studentloop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDebounce_ABurstOfSavesIsOneRun: three saves, each restarting the
// quiet timer; only the last timer firing starts a run, with the time of
// the first save. A debounce that ran on every save, or on a stale timer,
// fails.
func TestDebounce_ABurstOfSavesIsOneRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	saves := make(chan time.Time)
	runs := make(chan time.Time, 1)
	armed := make(chan chan time.Time)
	after := func(time.Duration) <-chan time.Time {
		c := make(chan time.Time, 1)
		armed <- c
		return c
	}
	go debounce(ctx, saves, runs, time.Hour, after)
	first := time.Unix(100, 0)
	var timers []chan time.Time
	for i := 0; i < 3; i++ {
		saves <- first.Add(time.Duration(i) * time.Millisecond)
		timers = append(timers, <-armed)
	}
	timers[0] <- time.Now() // stale: a later save restarted the wait
	timers[1] <- time.Now()
	select {
	case <-runs:
		t.Fatal("a stale timer started a run")
	default:
	}
	timers[2] <- time.Now()
	if got := <-runs; !got.Equal(first) {
		t.Errorf("run for the save at %v, want the burst's first %v", got, first)
	}
	select {
	case <-runs:
		t.Fatal("one burst made two runs")
	default:
	}
}

// fakeRunner reports each run on a channel instead of running go test.
type fakeRunner struct{ ran chan int }

func (f fakeRunner) Run(ctx context.Context, stage int) (Outcome, error) {
	select {
	case f.ran <- stage:
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
	return Outcome{Stage: stage, Checks: []CheckResult{{ID: "S1.x", Passed: true}}}, nil
}

// TestWatch_ASaveReruns: the watch runs once at the start and again after
// a real write to a Go file of the folder, both with file events and by
// scanning.
func TestWatch_ASaveReruns(t *testing.T) {
	for _, polling := range []bool{false, true} {
		name := "events"
		if polling {
			name = "polling"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := fakeRunner{ran: make(chan int)}
			done := make(chan time.Time, 4)
			w := Watch{Dir: dir, Stage: 1, Runner: r, Quiet: 10 * time.Millisecond, Poll: 10 * time.Millisecond, Polling: polling,
				Done: func(o Outcome, err error, savedAt time.Time) { done <- savedAt }}
			stopped := make(chan error)
			go func() { stopped <- w.Run(ctx) }()
			waitFor(t, r.ran, "the first run")
			if saved := <-done; !saved.IsZero() {
				t.Errorf("the first run has a save time %v", saved)
			}
			os.WriteFile(filepath.Join(dir, ".server.go.swp"), []byte("x"), 0o644)
			os.WriteFile(filepath.Join(dir, "server.go"), []byte("package stage1\n"), 0o644)
			waitFor(t, r.ran, "a run after the save")
			if saved := <-done; saved.IsZero() {
				t.Error("the rerun has no save time")
			}
			cancel()
			<-stopped
		})
	}
}

// waitFor waits for a run; the deadline only keeps a broken watch from
// hanging the suite.
func waitFor(t *testing.T, ran chan int, what string) {
	t.Helper()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
}

// scriptedRunner says on ran what it was asked to run ("every check", or
// the ID of a check run alone) and answers with what the test sends.
type scriptedRunner struct {
	ran     chan string
	answers chan answer
}

type answer struct {
	o   Outcome
	err error
}

func (s scriptedRunner) Run(ctx context.Context, stage int) (Outcome, error) {
	a, err := s.ask(ctx, "every check")
	if err != nil {
		return Outcome{}, err
	}
	return a.o, a.err
}

// ask says what is run and waits for the test's answer, or for the watch
// to end (a run the test no longer waits for must not block it).
func (s scriptedRunner) ask(ctx context.Context, what string) (answer, error) {
	select {
	case s.ran <- what:
	case <-ctx.Done():
		return answer{}, ctx.Err()
	}
	select {
	case a := <-s.answers:
		return a, nil
	case <-ctx.Done():
		return answer{}, ctx.Err()
	}
}

func (s scriptedRunner) RunCheck(ctx context.Context, stage int, id string) (Outcome, error) {
	a, err := s.ask(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	a.o.Only = id
	return a.o, a.err
}

func failingFirst(id string) Outcome {
	return Outcome{Stage: 1, Checks: []CheckResult{{ID: "S1.a", Passed: true}, {ID: id, Report: "FAIL " + id}, {ID: "S1.z"}}}
}

// TestWatch_ASaveRunsTheFirstFailingCheckAloneFirst: after a save, the
// check that failed first in the last run of every check runs alone, its
// outcome is reported, and only then does every check run. The first run
// has nothing to run alone; an error keeps the check of the run before;
// a stage that passes has none. A watch that ran the check alone after
// every check, ran the check of a stale run or of the check run alone,
// handed the lone check's outcome to Done (where progress is recorded),
// or ran a check alone after a pass fails.
func TestWatch_ASaveRunsTheFirstFailingCheckAloneFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := scriptedRunner{ran: make(chan string), answers: make(chan answer)}
	reported := make(chan string)
	w := Watch{Stage: 1, Runner: r, Alone: r,
		AloneDone: func(o Outcome, err error, savedAt time.Time) {
			reported <- fmt.Sprintf("alone %s: %s at %d", o.Only, o.State(), savedAt.Unix())
		},
		Done: func(o Outcome, err error, savedAt time.Time) {
			reported <- fmt.Sprintf("every check: %s %s err=%v at %d", o.State(), o.FirstFailing(), err, savedAt.Unix())
		}}
	runs := make(chan time.Time)
	stopped := make(chan error)
	go func() { stopped <- w.serve(ctx, runs) }()
	zero := time.Time{}.Unix()
	steps := []struct {
		save   int64 // 0: the first run, no save
		ran    string
		answer answer
		report string
	}{
		{0, "every check", answer{o: failingFirst("S1.b")}, fmt.Sprintf("every check: failing S1.b err=<nil> at %d", zero)},
		{1, "S1.b", answer{o: Outcome{Stage: 1, Checks: []CheckResult{{ID: "S1.b", Passed: true}}}}, "alone S1.b: passing at 1"},
		{-1, "every check", answer{o: failingFirst("S1.c")}, "every check: failing S1.c err=<nil> at 1"},
		{2, "S1.c", answer{o: failingFirst("S1.c")}, "alone S1.c: failing at 2"},
		{-1, "every check", answer{err: errors.New("no go")}, "every check: could not check  err=no go at 2"},
		{3, "S1.c", answer{o: Outcome{Stage: 1, Checks: []CheckResult{{ID: "S1.c", Passed: true}}}}, "alone S1.c: passing at 3"},
		{-1, "every check", answer{o: Outcome{Stage: 1, Checks: []CheckResult{{ID: "S1.c", Passed: true}}}}, "every check: passing  err=<nil> at 3"},
		{4, "every check", answer{o: failingFirst("S1.d")}, "every check: failing S1.d err=<nil> at 4"},
	}
	for i, s := range steps {
		if s.save > 0 {
			runs <- time.Unix(s.save, 0)
		}
		if got := receive(t, r.ran); got != s.ran {
			t.Fatalf("step %d ran %q, want %q", i, got, s.ran)
		}
		r.answers <- s.answer
		if got := receive(t, reported); got != s.report {
			t.Fatalf("step %d reported %q, want %q", i, got, s.report)
		}
	}
	cancel()
	<-stopped
}

// receive waits for the watch's next step; the deadline only keeps a
// broken watch from hanging the suite.
func receive(t *testing.T, c chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not go on")
		return ""
	}
}
