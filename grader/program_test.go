package grader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/grader/dayplan"
	"idemlab/grader/targets"
	"idemlab/kit/labdb"
)

func TestProgramAt_BinLabOnlyWhenItIsTheBinaryRunning(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin", "lab")
	other := filepath.Join(root, "lab.test")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("a built lab"), 0o755)
	os.WriteFile(other, []byte("a test binary"), 0o755)
	for _, tc := range []struct {
		name, root, exe, want string
	}{
		{"the checkout's bin/lab", root, bin, "bin/lab"},
		{"a test binary beside it", root, other, GoRunLab},
		{"bin/lab of no known checkout", "", bin, GoRunLab},
		{"no known executable", root, "", GoRunLab},
		{"a checkout without bin/lab", t.TempDir(), other, GoRunLab},
	} {
		if got := ProgramAt(tc.root, tc.exe); got != tc.want {
			t.Errorf("%s: ProgramAt = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestDayCommand_RunsAsPrinted runs the command a failing
// S6.day-replay-through-faults prints, from the checkout's root as a
// fresh clone has it, and requires it to write the day the check played.
func TestDayCommand_RunsAsPrinted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the lab with go run")
	}
	p := dayplan.DefaultParams(4242, 30)
	p.FaultRate = 0.5
	printed := dayCommand(p)
	if !strings.HasPrefix(printed, GoRunLab+" gen ") {
		t.Fatalf("under go test the day's command is %q: on a fresh clone only %q runs the lab", printed, GoRunLab)
	}
	root, err := targets.Root()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "day.jsonl")
	args := strings.Fields(printed)
	for i, a := range args {
		if a == "day.jsonl" {
			args[i] = out
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", printed, err, msg)
	}
	plan, err := dayplan.Generate(p.Reset.Seed, p)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := plan.Write(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s wrote another day than the check played:\n%s", printed, got[:min(len(got), 400)])
	}
}

// TestWithRunHint_NamesTheStageAndKeepsTheError: a check that needs a
// server of its own says what to run instead, on the stage being graded
// and for that check, in commands that work where lab was started, and
// stays the error it was; any other error is left as it is.
func TestWithRunHint_NamesTheStageAndKeepsTheError(t *testing.T) {
	for _, sentinel := range []error{targets.ErrNoChild, targets.ErrNoReplicas} {
		err := WithRunHint(fmt.Errorf("crash the server: %w", sentinel), 7, "S6.crash-recovery")
		if !errors.Is(err, sentinel) {
			t.Errorf("%v is no longer %v", err, sentinel)
		}
		for _, want := range []string{"`make stage-7 RUN=S6.crash-recovery`", "`" + Program() + " grade --stage 7 --run S6.crash-recovery`"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %s", err, want)
			}
		}
	}
	t.Setenv(labdb.EnvRootFrom, "../..") // lab started in stages/stage7
	err := WithRunHint(targets.ErrNoChild, 7, "S6.crash-recovery")
	for _, want := range []string{"`cd ../.. && make stage-7 ", "`cd ../.. && " + Program() + " grade "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("from a stage's folder, %q does not say %s", err, want)
		}
	}
	other := errors.New("the server answered 500")
	if got := WithRunHint(other, 7, "S6.crash-recovery"); got != other {
		t.Errorf("another error became %q", got)
	}
}

// TestRunCheck_HintNamesTheGradedStage: a check of stage 6 that needs a
// server of its own, run on a stage 7 server reached by its URL (lab
// grade --stage 7 --url), says to run stage 7, where it ran, and not
// stage 6, whose code is another.
func TestRunCheck_HintNamesTheGradedStage(t *testing.T) {
	check := Check{ID: "S6.needs-a-child", Stage: 6, Run: func(*T) error { return targets.ErrNoChild }}
	started := func(ctx context.Context, s targets.Subject) (*targets.Target, func(), error) {
		return &targets.Target{URL: "http://127.0.0.1:1", Client: http.DefaultClient}, func() {}, nil
	}
	r := RunCheck(context.Background(), targets.Subject{Stage: 7, Name: "a server at --url"}, check, 1, started)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "make stage-7 RUN=S6.needs-a-child") || strings.Contains(r.Err.Error(), "stage-6") {
		t.Errorf("the check said %v; want it to name make stage-7 RUN=S6.needs-a-child", r.Err)
	}
}
