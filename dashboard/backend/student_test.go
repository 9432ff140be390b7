package backend

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"idemlab/dashboard"
	"idemlab/kit/labdb"
	"idemlab/kit/stage"
	"idemlab/solutions/stage0"
	"idemlab/solutions/stage6"
)

// stage6Binary builds the reference solution 6's test binary, which
// stands in for a student's correct stage: it serves the stage as a child
// process, as the student's own would.
func stage6Binary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stage6.test")
	build := exec.CommandContext(t.Context(), "go", "test", "-c", "-o", bin, "./solutions/stage6")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c ./solutions/stage6: %v\n%s", err, out)
	}
	return bin
}

// TestStudent_RestartMissesNoEvent: the first answer of a restarted child
// shows on the stream. It catches a subscription that finds the new child
// by reconnecting after the old stream broke, and so misses the retries
// that follow a crash at once (the "0 replayed" of a class's screen).
func TestStudent_RestartMissesNoEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a stage's test binary and runs it as a child process")
	}
	s, err := StartStudent(t.Context(), stage6Binary(t), t.TempDir(), labdb.TestTarget())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	restartKeepsTheDatabaseAndTheStream(t, s)
}

// TestDemo_StudentCodeUnderCrashesRaisesNoFalseAlarm plays the crashes
// profile against the student's code, run as a child process that each
// crash kills with -9, with the reference solution 6 standing in for the
// student's: a correct server. The events a killed process had not
// streamed yet are lost, so the dashboard must say what it cannot know
// ("? N unreported executions") and never that money appeared or moved
// twice. It catches a money check that ignores executions no event
// reported (the false "₩… appeared" of a class's screen).
func TestDemo_StudentCodeUnderCrashesRaisesNoFalseAlarm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a stage's test binary and plays 12s of traffic")
	}
	bin := stage6Binary(t)
	stages := Stages{
		Solutions: map[int]stage.Factory{0: stage0.New, 6: stage6.New},
		Build:     func(context.Context, int) (string, error) { return bin, nil },
	}
	crashes, err := ProfileNamed("crashes")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	right := dashboard.Choice{Stage: 6, Yours: true}
	if err := Plain(t.Context(), stages, dashboard.Choice{Stage: 0}, right, crashes, 12*time.Second, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), right.String()) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no summary line for %s", right)
	}
	if strings.Contains(line, "off by") || !strings.Contains(line, "₩0 moved twice") || !strings.Contains(line, "₩0 created") {
		t.Errorf("a correct server under crashes was judged wrong:\n%s", line)
	}
}
