package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// runLabCommand runs the lab command line in this process and returns its
// exit status and output.
func runLabCommand(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errs bytes.Buffer
	code = run(context.Background(), args, &out, &errs)
	return code, out.String(), errs.String()
}

// syncBuffer is a buffer a running command writes to while a test reads it.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // closed by the next Write (see next)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
	}
	return s.b.Write(p)
}

// next returns what was written so far and a channel that the next Write
// closes: a test waits on it for more output instead of polling.
func (s *syncBuffer) next() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == nil {
		s.wrote = make(chan struct{})
	}
	return s.b.String(), s.wrote
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestGen_SameSeedSameBytes(t *testing.T) {
	_, a, _ := runLabCommand(t, "gen", "--seed", "5", "--ops", "120")
	_, b, _ := runLabCommand(t, "gen", "--seed", "5", "--ops", "120")
	file := filepath.Join(t.TempDir(), "day.jsonl")
	if code, _, errs := runLabCommand(t, "gen", "--seed", "5", "--ops", "120", "-o", file); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	c, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if a == "" || a != b || a != string(c) {
		t.Fatal("lab gen --seed 5 gave different bytes on stdout, twice, and in a file")
	}
	if _, d, _ := runLabCommand(t, "gen", "--seed", "6", "--ops", "120"); d == a {
		t.Fatal("seeds 5 and 6 gave the same plan")
	}
}

// TestGen_ShippedDayIsSeedOne: the shipped plan is what lab gen makes
// today; if the generator changes, make datasets must ship a new day.
func TestGen_ShippedDayIsSeedOne(t *testing.T) {
	shipped, err := os.ReadFile("../../datasets/day-small.plan.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	_, out, _ := runLabCommand(t, "gen", "--seed", "1", "--ops", "1000")
	if out != string(shipped) {
		t.Fatal("datasets/day-small.plan.jsonl is not lab gen --seed 1 --ops 1000: run make datasets")
	}
}

func TestGen_RefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"gen", "--ops", "0"},
		{"gen", "--fault-rate", "2"},
		{"gen", "--customers", "1"},
		{"gen", "--no-such-flag"},
	} {
		code, _, errs := runLabCommand(t, args...)
		if code != 2 || errs == "" {
			t.Errorf("%s: exit %d, stderr %q; want 2 and a reason", strings.Join(args, " "), code, errs)
		}
	}
}

// TestMakeGen_WritesAFile: make gen, as the README shows it (OPS=1000),
// writes the plan to a file and says which, instead of a thousand lines of
// JSON to the terminal: its recipe gives lab gen an -o.
func TestMakeGen_WritesAFile(t *testing.T) {
	raw, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, rule, ok := strings.Cut(string(raw), "\ngen:")
	if !ok {
		t.Fatal("the Makefile has no gen target")
	}
	recipe, _, _ := strings.Cut(rule, "\n\n")
	if !strings.Contains(recipe, "lab gen") || !strings.Contains(recipe, " -o ") {
		t.Errorf("make gen runs lab gen without -o, and prints the plan to the terminal:\ngen:%s", recipe)
	}
}

// replayDemoRecipe is the recipe of the Makefile's replay-demo target.
func replayDemoRecipe(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, rule, ok := strings.Cut(string(raw), "\nreplay-demo:")
	if !ok {
		t.Fatal("the Makefile has no replay-demo target")
	}
	recipe, _, _ := strings.Cut(rule, "\n\n")
	return recipe
}

// TestMakeReplayDemo_RefusesAPortTaken: make replay-demo waits for its
// server by asking $url/healthz. With another lab server on that port, its
// own server could not listen, the other answered the wait, and the
// replay and the dashboard were refused the token of a server that never
// started ("the server refused the admin token"). The recipe asks the port
// before it starts its server, and stops there with PORT= to try.
func TestMakeReplayDemo_RefusesAPortTaken(t *testing.T) {
	recipe := replayDemoRecipe(t)
	probe := strings.Index(recipe, "already answers on")
	serve := strings.Index(recipe, "bin/lab serve")
	if probe < 0 || serve < 0 || probe > serve || !strings.Contains(recipe, "PORT=") {
		t.Errorf("make replay-demo starts its server without asking first whether its port is taken:\nreplay-demo:%s", recipe)
	}
}

// TestMakeReplayDemo_SaysWhetherThereIsAReport: a q before the day's
// last operation stops the replay, whose report file then holds only
// "lab replay: context canceled", and the recipe said "the replay's
// report so far" all the same. It asks whether the replay still runs
// when the dashboard closes, and says there is no report if it does.
func TestMakeReplayDemo_SaysWhetherThereIsAReport(t *testing.T) {
	recipe := replayDemoRecipe(t)
	dash := strings.Index(recipe, "bin/lab dash")
	asks := strings.Index(recipe, "kill -0 $$replay")
	if dash < 0 || asks < dash || !strings.Contains(recipe[asks:], "no report") || strings.Contains(recipe, "report so far") {
		t.Errorf("make replay-demo does not say, once the dashboard closes, whether the replay ended with a report:\nreplay-demo:%s", recipe)
	}
}

// TestMakeDemo_TakesStage: make demo STAGE=7, as docs/instructor.md
// offers it, starts the right side at that stage, on a terminal and off
// one; a STAGE in the environment (an export left from make serve) does
// not: the demo the class sees is the one the command line asked for.
func TestMakeDemo_TakesStage(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on the PATH")
	}
	demo := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-n", "--no-print-directory", "demo"}, args...)...)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n demo %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := demo([]string{"STAGE=3"}, "STAGE=7"); strings.Count(out, "--stage 7") != 2 || strings.Contains(out, "--stage 3") {
		t.Errorf("make demo STAGE=7 (STAGE=3 in the environment) does not pass --stage 7 to both of its lab demo commands:\n%s", out)
	}
	if out := demo([]string{"STAGE=3"}); strings.Contains(out, "--stage") {
		t.Errorf("make demo takes STAGE from the environment:\n%s", out)
	}
}
