package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"idemlab/grader/replay"
	"idemlab/grader/timeline"
	"idemlab/kit/accesslog"
	"idemlab/kit/problem"
	sol0 "idemlab/solutions/stage0"
)

func smallPlan(t *testing.T) string {
	t.Helper()
	plan := filepath.Join(t.TempDir(), "day.plan.jsonl")
	if code, _, errs := runLabCommand(t, "gen", "--seed", "3", "--ops", "150", "--fault-rate", "0.5", "-o", plan); code != 0 {
		t.Fatalf("gen: %s", errs)
	}
	return plan
}

// TestReplay_NaiveServerIsInvalid: the naive server doubles money, lab
// replay says so with exit status 1, and the files it writes agree: the
// reference Tally of the access log equals the answer key from the books.
// Where the report cuts a list of findings short, it names the
// results.json it wrote, which holds them all.
func TestReplay_NaiveServerIsInvalid(t *testing.T) {
	plan := smallPlan(t)
	dir := filepath.Dir(plan)
	logFile, answer, results := filepath.Join(dir, "day.access.jsonl"), filepath.Join(dir, "day.answer.json"), filepath.Join(dir, "results")
	code, out, errs := runLabCommand(t, "replay", "--log", plan, "--stage", "0", "--solution", "--examples", "1",
		"--access-log", logFile, "--answer", answer, "--results", results)
	if code != 1 || !strings.Contains(out, "INVALID") || !strings.Contains(out, "executed more than once") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if more := "more (all of them in " + filepath.Join(results, "results.json") + ")"; !strings.Contains(out, more) {
		t.Fatalf("the cut list does not say %q:\n%s", more, out)
	}
	raw, err := os.ReadFile(answer)
	if err != nil {
		t.Fatal(err)
	}
	var want accesslog.Report
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sol0.Tally(bytes.NewReader(log))
	if err != nil || got != want || want.DoubleTransfers == 0 {
		t.Fatalf("tally %+v (%v), answer key %+v", got, err, want)
	}
	var res struct {
		Valid  bool           `json:"valid"`
		Counts map[string]int `json:"counts"`
	}
	raw, err = os.ReadFile(filepath.Join(results, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Valid || res.Counts["double_applied"] == 0 {
		t.Fatalf("results.json: %s", raw)
	}
	if h, err := os.ReadFile(filepath.Join(results, "history.jsonl")); err != nil || bytes.Count(h, []byte("\n")) < 150 {
		t.Fatalf("history.jsonl: %d bytes, %v", len(h), err)
	}
}

// TestReplay_WithoutResultsSaysHowToHaveThem: without --results, a list
// cut short names no results.json, since none is written, but the flag
// that writes one.
func TestReplay_WithoutResultsSaysHowToHaveThem(t *testing.T) {
	plan := smallPlan(t)
	code, out, errs := runLabCommand(t, "replay", "--log", plan, "--stage", "0", "--solution", "--examples", "1")
	if code != 1 || !strings.Contains(out, "more (--results DIR writes all of them to DIR/results.json)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out, "in results.json") {
		t.Fatalf("names a results.json that was not written:\n%s", out)
	}
}

func TestReplay_SolutionIsValid(t *testing.T) {
	plan := smallPlan(t)
	n := len(solutions) - 1
	code, out, errs := runLabCommand(t, "replay", "--log", plan, "--stage", strconv.Itoa(n), "--solution")
	if code != 0 || !strings.Contains(out, "VALID") {
		t.Fatalf("solutions/stage%d: exit %d\n%s\n%s", n, code, out, errs)
	}
}

func TestReplay_RefusesBadFlags(t *testing.T) {
	plan := smallPlan(t)
	for _, args := range [][]string{
		{"replay"},
		{"replay", "--log", "no/such/plan.jsonl", "--solution"},
		{"replay", "--log", plan, "--access-log", "x.jsonl"},
		{"replay", "--log", plan, "--stage", fmt.Sprint(lastStage + 1), "--solution"},
		{"replay", "--log", plan, "--solution", "--rate", "-5"},
	} {
		if code, _, errs := runLabCommand(t, args...); code != 2 || errs == "" {
			t.Errorf("%s: exit %d, stderr %q; want 2 and a reason", strings.Join(args, " "), code, errs)
		}
	}
}

// TestReplay_OpDrawsItsTimeline: --op draws one operation of the day, one
// whose answer the network lost after the naive server had processed it,
// so that its retry pays again: the cut attempt and the highlighted
// executions, in the terminal and in an HTML page beside results.json.
func TestReplay_OpDrawsItsTimeline(t *testing.T) {
	plan := smallPlan(t)
	raw, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	op := ""
	for _, line := range strings.Split(string(raw), "\n") {
		var o struct {
			Op       string `json:"op"`
			Endpoint string `json:"endpoint"`
			Fate     struct {
				Faults []string `json:"faults"`
			} `json:"fate"`
		}
		if json.Unmarshal([]byte(line), &o) == nil && o.Endpoint == "/deposits" && len(o.Fate.Faults) > 0 && o.Fate.Faults[0] == "reset-after-processing" {
			op = o.Op
			break
		}
	}
	if op == "" {
		t.Fatal("the plan has no deposit whose first answer is lost after processing")
	}
	results := filepath.Join(filepath.Dir(plan), "results")
	code, out, errs := runLabCommand(t, "replay", "--log", plan, "--stage", "0", "--solution", "--results", results, "--op", op)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	_, drawn, _ := strings.Cut(out, "\n"+op+"\n")
	for _, want := range []string{"double_applied", "╳", "✗", "timeline: "} {
		if !strings.Contains(drawn, want) {
			t.Errorf("the drawing of %s lacks %q:\n%s", op, want, drawn)
		}
	}
	page, err := os.ReadFile(filepath.Join(results, "replay-"+op+".html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `class="mark excess"`) || !strings.Contains(string(page), "--op "+op) {
		t.Errorf("the page draws no highlighted execution, or no command to draw it again")
	}
}

// TestDrawOp_ToldDuplicateMarksTheSubmissionItNames: lab replay --op draws
// a told_duplicate finding about an edit on the edit's lane alone; the
// original, whose own 409 came after its operation ran, is drawn without
// the mark. It catches a finding drawn on every lane of its operation.
func TestDrawOp_ToldDuplicateMarksTheSubmissionItNames(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	attempt := func(id, client string, at time.Duration, status int, prob string) timeline.Attempt {
		return timeline.Attempt{ID: id, Client: client, Method: "POST", Path: "/transfers", Key: "k-1", Op: "op-0001",
			Start: t0.Add(at), End: t0.Add(at + 10*time.Millisecond), Status: status, Problem: prob}
	}
	dup := problem.DuplicateRequest.URI()
	res := &replay.Result{History: &timeline.History{
		Attempts: []timeline.Attempt{attempt("a1", replay.SubmitOriginal, 0, 0, ""), attempt("a2", replay.SubmitOriginal, 20*time.Millisecond, 409, dup),
			attempt("a3", replay.SubmitEdit, 40*time.Millisecond, 409, dup)},
		Events: []timeline.Event{{At: t0.Add(5 * time.Millisecond), Kind: timeline.Execution, Attempt: "a1", Op: "op-0001"}},
	}}
	res.History.Attempts[0].Err = "connection reset"
	rc := replay.DayReconciliation{Findings: []replay.DayFinding{
		{Kind: "no_usable_answer", Op: "op-0001", Story: "executed, and the client stopped at 409"},
		{Kind: "told_duplicate", Op: "op-0001", Submission: replay.SubmitEdit, Story: "the edit was told 409 duplicate-request and never executed"},
	}}
	var out bytes.Buffer
	f := replayFlags{op: "op-0001", plan: "day.plan.jsonl", results: t.TempDir()}
	if err := drawOp(&out, f, rc, res, false); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out.String(), "\n") {
		lane := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(lane, replay.SubmitEdit+" ") && !strings.Contains(l, "⊗"):
			t.Errorf("the edit's refusal is not marked: %q\n%s", l, out.String())
		case strings.HasPrefix(lane, replay.SubmitOriginal+" ") && strings.Contains(l, "⊗"):
			t.Errorf("the original's 409 is marked as a request that never ran: %q\n%s", l, out.String())
		}
	}
	if !strings.Contains(out.String(), "⊗ told its request was a duplicate (409); that request never ran") {
		t.Errorf("the legend does not say what ⊗ is:\n%s", out.String())
	}
}
