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

func (f fakeRunner) Run(ctx context.Context, stage int, each func(CheckResult)) (Outcome, error) {
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

// scriptedRunner runs the outcomes the test sends: it says on ran that
// it runs, then hands each of the answer's checks to each, in order,
// before returning the answer.
type scriptedRunner struct {
	ran     chan struct{}
	answers chan answer
}

type answer struct {
	o   Outcome
	err error
}

func (s scriptedRunner) Run(ctx context.Context, stage int, each func(CheckResult)) (Outcome, error) {
	select {
	case s.ran <- struct{}{}:
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
	var a answer
	select {
	case a = <-s.answers:
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
	for _, c := range a.o.Checks {
		if each != nil {
			each(c)
		}
	}
	return a.o, a.err
}

func failingFirst(id string) Outcome {
	return Outcome{Stage: 1, Checks: []CheckResult{{ID: "S1.a", Passed: true}, {ID: id, Report: "FAIL " + id}, {ID: "S1.z"}}}
}

// TestWatch_EachCheckIsReportedAsItEnds: every run starts naming the
// check that failed first in the run before (none for the first run, an
// error, a stage that does not build or a run in which the check could
// not run keeps the one before, a pass has none), each check reaches
// Checked as it ends with the save's time, and Done comes last. A watch
// that named a stale check, lost the save's time, or reported the checks
// only after Done fails.
func TestWatch_EachCheckIsReportedAsItEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := scriptedRunner{ran: make(chan struct{}), answers: make(chan answer)}
	reported := make(chan string, 16)
	dir := t.TempDir()
	w := Watch{Dir: dir, Stage: 1, Runner: r,
		Started: func(savedAt time.Time, first string) {
			reported <- fmt.Sprintf("start at %d, working on %q", savedAt.Unix(), first)
		},
		Checked: func(c CheckResult, savedAt time.Time) {
			reported <- fmt.Sprintf("%s passed=%v at %d", c.ID, c.Passed, savedAt.Unix())
		},
		Done: func(o Outcome, err error, savedAt time.Time) {
			reported <- fmt.Sprintf("done: %s %s err=%v at %d", o.State(), o.FirstFailing(), err, savedAt.Unix())
		}}
	runs := make(chan time.Time)
	stopped := make(chan error)
	go func() { stopped <- w.serve(ctx, runs) }()
	zero := time.Time{}.Unix()
	steps := []struct {
		save   int64 // 0: the first run, no save
		answer answer
		report []string
	}{
		{0, answer{o: failingFirst("S1.b")}, []string{fmt.Sprintf(`start at %d, working on ""`, zero),
			fmt.Sprintf("S1.a passed=true at %d", zero), fmt.Sprintf("S1.b passed=false at %d", zero), fmt.Sprintf("S1.z passed=false at %d", zero),
			fmt.Sprintf("done: failing S1.b err=<nil> at %d", zero)}},
		{1, answer{o: failingFirst("S1.c")}, []string{`start at 1, working on "S1.b"`,
			"S1.a passed=true at 1", "S1.c passed=false at 1", "S1.z passed=false at 1", "done: failing S1.c err=<nil> at 1"}},
		{2, answer{err: errors.New("no go")}, []string{`start at 2, working on "S1.c"`, "done: could not check  err=no go at 2"}},
		{3, answer{o: Outcome{Stage: 1, Build: "server.go:1:1: expected declaration"}}, []string{`start at 3, working on "S1.c"`,
			"done: does not build  err=<nil> at 3"}},
		{4, answer{o: Outcome{Stage: 1, Checks: []CheckResult{{ID: "S1.c", Report: "COULD NOT RUN S1.c  a claim"}}}}, []string{`start at 4, working on "S1.c"`,
			"S1.c passed=false at 4", "done: failing  err=<nil> at 4"}},
		{5, answer{o: Outcome{Stage: 1, Checks: []CheckResult{{ID: "S1.c", Passed: true}}}}, []string{`start at 5, working on "S1.c"`,
			"S1.c passed=true at 5", "done: passing  err=<nil> at 5"}},
		{6, answer{o: failingFirst("S1.d")}, []string{`start at 6, working on ""`,
			"S1.a passed=true at 6", "S1.d passed=false at 6", "S1.z passed=false at 6", "done: failing S1.d err=<nil> at 6"}},
	}
	for i, s := range steps {
		if s.save > 0 {
			save(t, dir, "server.go", fmt.Sprintf("package stage1 // save %d\n", s.save))
			runs <- time.Unix(s.save, 0)
		}
		select {
		case <-r.ran:
		case <-time.After(10 * time.Second):
			t.Fatalf("step %d did not run", i)
		}
		r.answers <- s.answer
		for _, want := range s.report {
			if got := receive(t, reported); got != want {
				t.Fatalf("step %d reported %q, want %q", i, got, want)
			}
		}
	}
	cancel()
	<-stopped
}

// TestWatch_OneSaveIsOneRun: the file events of one save can reach the
// watch as two bursts, the second after the quiet time (the rest of an
// editor's write on a busy machine), and an editor can write a file
// again without an edit. Neither runs the checks again: the second burst
// finds the files as the run before read them, and says so. A later
// edit runs them. A watch that ran on every burst of events runs the
// second burst before the edit, with its time, and fails.
func TestWatch_OneSaveIsOneRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	save(t, dir, "server.go", "package stage1\n")
	r := fakeRunner{ran: make(chan int)}
	done := make(chan time.Time, 4)
	unchanged := make(chan time.Time, 4)
	w := Watch{Dir: dir, Stage: 1, Runner: r,
		Done:      func(o Outcome, err error, savedAt time.Time) { done <- savedAt },
		Unchanged: func(savedAt time.Time) { unchanged <- savedAt }}
	runs := make(chan time.Time)
	stopped := make(chan error)
	go func() { stopped <- w.serve(ctx, runs) }()
	waitFor(t, r.ran, "the first run")
	<-done

	save(t, dir, "server.go", "package stage1 // edited\n")
	runs <- time.Unix(1, 0) // the save's first burst of events
	waitFor(t, r.ran, "a run after the save")
	if got := <-done; got.Unix() != 1 {
		t.Fatalf("the save's run has the time of the save at %d, want 1", got.Unix())
	}
	runs <- time.Unix(2, 0) // the same save's late events
	if got := receive(t, unchanged); got.Unix() != 2 {
		t.Fatalf("the late events of the save at %d were not told apart", got.Unix())
	}
	save(t, dir, "keys.go", "package stage1\n") // a new file: a change
	runs <- time.Unix(3, 0)
	waitFor(t, r.ran, "a run after the new file")
	if got := <-done; got.Unix() != 3 {
		t.Fatalf("a run for the events at %d, want 3 (the new file)", got.Unix())
	}
	save(t, dir, ".keys.go.swp", "an editor's swap file")
	save(t, dir, "server.go", "package stage1 // edited\n") // written again, no edit
	runs <- time.Unix(4, 0)
	if got := receive(t, unchanged); got.Unix() != 4 {
		t.Fatalf("a save without an edit at %d was not told apart", got.Unix())
	}
	cancel()
	<-stopped
	select {
	case at := <-done:
		t.Fatalf("an extra run for the events at %d", at.Unix())
	default:
	}
}

func save(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// receive waits for the watch's next step; the deadline only keeps a
// broken watch from hanging the suite.
func receive[T any](t *testing.T, c chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not go on")
		var zero T
		return zero
	}
}
