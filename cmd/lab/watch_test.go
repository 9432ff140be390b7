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
	defer func() { s.ran <- struct{}{} }()
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
