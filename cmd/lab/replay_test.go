package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
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
	"idemlab/kit/server"
	sol0 "idemlab/solutions/stage0"
	sol9 "idemlab/solutions/stage9"
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
		{"replay", "--log", plan, "--solution", "--core", "http://t@127.0.0.1:1"},
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

// TestDrawOp_ThePageReproducesTheSameDay: the command the page and the
// terminal give to draw the operation again replays the day with as many
// clients in flight as this one had; without --clients 8 it ran them one
// at a time, and the races the picture shows did not happen. It keeps the
// pace (--rate) and the engine (--db, without its password) as well.
func TestDrawOp_ThePageReproducesTheSameDay(t *testing.T) {
	f := replayFlags{op: "op-002", plan: "day.plan.jsonl", results: t.TempDir(), clients: 8}
	f.stage, f.solution = 3, true
	res := &replay.Result{History: &timeline.History{Attempts: []timeline.Attempt{opAttempt("a1", replay.SubmitOriginal, 0, 201, "")}}}
	res.History.Attempts[0].Op = "op-002"
	var out bytes.Buffer
	if err := drawOp(&out, f, replay.DayReconciliation{}, res, false); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(f.results, "replay-op-002.html"))
	if err != nil {
		t.Fatal(err)
	}
	want := "replay --log day.plan.jsonl --stage 3 --solution --clients 8 --op op-002"
	if !strings.Contains(string(page), want) {
		t.Errorf("the page does not say %q", want)
	}
	f.clients = 1
	if got := replayCommand(f); strings.Contains(got, "--clients") {
		t.Errorf("one client, the default, spelled out: %q", got)
	}
	// The pace and the engine decide the races too; a password is not
	// printed.
	f.rate, f.db = 20, "postgres://lab:secret@127.0.0.1:5432/postgres"
	got := replayCommand(f)
	if !strings.Contains(got, " --rate 20 ") || !strings.Contains(got, " --db postgres://") || strings.Contains(got, "secret") {
		t.Errorf("a day replayed at 20 operations a second on PostgreSQL reproduced as %q", got)
	}
}

// opT0 is when the hand-made histories of operation op-0001 begin.
var opT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// opAttempt is a request of op-0001 under key k-1, sent at after opT0
// and answered 10ms later.
func opAttempt(id, client string, at time.Duration, status int, prob string) timeline.Attempt {
	return timeline.Attempt{ID: id, Client: client, Method: "POST", Path: "/transfers", Key: "k-1", Op: "op-0001",
		Start: opT0.Add(at), End: opT0.Add(at + 10*time.Millisecond), Status: status, Problem: prob}
}

// TestDrawOp_ToldDuplicateMarksTheSubmissionItNames: lab replay --op draws
// a told_duplicate finding about an edit on the edit's lane alone; the
// original, whose own 409 came after its operation ran, is drawn without
// the mark. It catches a finding drawn on every lane of its operation.
func TestDrawOp_ToldDuplicateMarksTheSubmissionItNames(t *testing.T) {
	dup := problem.DuplicateRequest.URI()
	res := &replay.Result{History: &timeline.History{
		Attempts: []timeline.Attempt{opAttempt("a1", replay.SubmitOriginal, 0, 0, ""), opAttempt("a2", replay.SubmitOriginal, 20*time.Millisecond, 409, dup),
			opAttempt("a3", replay.SubmitEdit, 40*time.Millisecond, 409, dup)},
		Events: []timeline.Event{{At: opT0.Add(5 * time.Millisecond), Kind: timeline.Execution, Attempt: "a1", Op: "op-0001"}},
	}}
	res.History.Attempts[0].Err = "connection reset"
	drawn, _ := drawOpOf(t, res,
		replay.DayFinding{Kind: "no_usable_answer", Op: "op-0001", Story: "executed, and the client stopped at 409"},
		replay.DayFinding{Kind: "told_duplicate", Op: "op-0001", Submission: replay.SubmitEdit, Story: "the edit was told 409 duplicate-request and never executed"})
	if l := laneOf(drawn, replay.SubmitEdit); !strings.Contains(l, "⊗") {
		t.Errorf("the edit's refusal is not marked: %q\n%s", l, drawn)
	}
	if l := laneOf(drawn, replay.SubmitOriginal); strings.Contains(l, "⊗") {
		t.Errorf("the original's 409 is marked as a request that never ran: %q\n%s", l, drawn)
	}
	if !strings.Contains(drawn, "⊗ told its request was a duplicate (409); that request never ran") {
		t.Errorf("the legend does not say what ⊗ is:\n%s", drawn)
	}
}

// drawOpOf draws op-0001 of res, whose day found findings, with the
// terminal's glyphs and no colour, and returns the drawing and the folder
// its page went to.
func drawOpOf(t *testing.T, res *replay.Result, findings ...replay.DayFinding) (drawn, dir string) {
	t.Helper()
	var out bytes.Buffer
	f := replayFlags{op: "op-0001", plan: "day.plan.jsonl", results: t.TempDir()}
	if err := drawOp(&out, f, replay.DayReconciliation{Findings: findings}, res, false); err != nil {
		t.Fatal(err)
	}
	return out.String(), f.results
}

// laneOf is the line of drawn that draws client's lane, "" if none does.
func laneOf(drawn, client string) string {
	for _, l := range strings.Split(drawn, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), client+" ") {
			return l
		}
	}
	return ""
}

// TestDrawOp_EachFindingMarksWhatItNames: an operation that ran twice and
// whose edit was told 409 duplicate-request is drawn by its worst harm,
// the double: its two executions ✗ on the original's lane, and the edit's
// 409 ⊗ on the edit's; the legend, in the terminal and on the page, names
// both. It catches the picture drawn by its mildest finding (the
// executions marked ⊗, the legend saying nothing ran more often than
// asked) and a told-duplicate finding dropped from the picture when a
// worse one names it.
func TestDrawOp_EachFindingMarksWhatItNames(t *testing.T) {
	res := &replay.Result{History: &timeline.History{
		Attempts: []timeline.Attempt{opAttempt("a1", replay.SubmitOriginal, 0, 0, ""), opAttempt("a2", replay.SubmitOriginal, 20*time.Millisecond, 201, ""),
			opAttempt("a3", replay.SubmitEdit, 40*time.Millisecond, 409, problem.DuplicateRequest.URI())},
		Events: []timeline.Event{{At: opT0.Add(5 * time.Millisecond), Kind: timeline.Execution, Attempt: "a1", Op: "op-0001", Count: 1},
			{At: opT0.Add(25 * time.Millisecond), Kind: timeline.Execution, Attempt: "a2", Op: "op-0001", Count: 2}},
	}}
	res.History.Attempts[0].Err, res.History.Attempts[0].Cut = "connection reset", true
	drawn, dir := drawOpOf(t, res,
		replay.DayFinding{Kind: "double_applied", Op: "op-0001", Story: "executed 2 times"},
		replay.DayFinding{Kind: "told_duplicate", Op: "op-0001", Submission: replay.SubmitEdit, Story: "the edit was told 409 duplicate-request and never executed"})
	if l := laneOf(drawn, replay.SubmitOriginal); strings.Count(l, "✗") != 2 || strings.Contains(l, "⊗") {
		t.Errorf("the original's lane should hold its two executions as ✗ and no ⊗: %q\n%s", l, drawn)
	}
	if l := laneOf(drawn, replay.SubmitEdit); !strings.Contains(l, "⊗") {
		t.Errorf("the edit's refusal is not marked ⊗: %q\n%s", l, drawn)
	}
	for _, want := range []string{"✗ execution of the finding (ran more often than asked)", "⊗ told its request was a duplicate (409); that request never ran"} {
		if !strings.Contains(drawn, want) {
			t.Errorf("the legend does not say %q:\n%s", want, drawn)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "replay-op-0001.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<title>lab replay --op op-0001: double_applied</title>`, `class="mark excess"`, `class="mark refused"`,
		`<span class="hot excess">✗ execution of the finding (ran more often than asked)</span>`,
		`<span class="hot refused">⊗ told its request was a duplicate (409); that request never ran</span>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// TestReplay_CoreReconcilesAServerElsewhere: lab replay --url of a stage 9
// server reconciles the core ledger it posts to only when told where that
// is (--core, as lab serve prints it): a transfer the core refused for
// good (here every one over its own limit) is then a not_posted finding
// that names the dead letter with the core's answer. It catches a --core
// that is read and not passed on.
func TestReplay_CoreReconcilesAServerElsewhere(t *testing.T) {
	plan := smallPlan(t)
	c, coreURL, stopCore, err := server.StartCore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopCore)
	c.Faults.LimitAmount(100_000)
	srv, err := server.New(t.Context(), server.Options{DB: ":memory:", Stage: sol9.New, Lab: true, CoreURL: coreURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	args := []string{"replay", "--log", plan, "--url", hs.URL, "--admin-token", srv.AdminToken()}
	if code, out, errs := runLabCommand(t, args...); code != 0 || strings.Contains(out, "dead letter") {
		t.Fatalf("without --core: exit %d, want 0 and no core reconciled\n%s\n%s", code, out, errs)
	}
	code, out, errs := runLabCommand(t, append(args, "--core", coreURL)...)
	if code != 1 || !strings.Contains(out, "is a dead letter, refused by the core for good (400 ") {
		t.Fatalf("with --core: exit %d, want 1 and the dead letters named with the core's answer\n%s\n%s", code, out, errs)
	}
}

// TestReplay_ASecondDayAgainstTheSameCoreReconciles: a lab reset leaves
// the core ledger's postings (the core is another system), so the second
// day replayed into one lab serve --stage 9 found the first day's
// postings and called the day INVALID, every one "posted in the core
// ledger, and the bank has no such transfer". The replay reconciles only
// what the core was told during its own day.
func TestReplay_ASecondDayAgainstTheSameCoreReconciles(t *testing.T) {
	plan := smallPlan(t)
	_, coreURL, stopCore, err := server.StartCore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopCore)
	srv, err := server.New(t.Context(), server.Options{DB: ":memory:", Stage: sol9.New, Lab: true, CoreURL: coreURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	args := []string{"replay", "--log", plan, "--url", hs.URL, "--admin-token", srv.AdminToken(), "--core", coreURL}
	for _, day := range []string{"first", "second"} {
		if code, out, errs := runLabCommand(t, args...); code != 0 || !strings.Contains(out, "\nVALID") {
			t.Fatalf("the %s day: exit %d, want 0 and VALID\n%s\n%s", day, code, out, errs)
		}
	}
}
