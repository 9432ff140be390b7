package studentloop

import (
	"context"
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
	f.ran <- stage
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
