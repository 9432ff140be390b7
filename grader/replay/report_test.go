package replay_test

import (
	"strconv"
	"strings"
	"testing"

	"idemlab/grader/replay"
	"idemlab/kit/bank"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
)

// heading is the report's line above what each client of an executed
// operation finally knows.
const heading = "  what each client whose operation executed finally knows:"

// knownCounts sums the lines the report of rc writes under heading.
func knownCounts(t *testing.T, rc replay.DayReconciliation) int {
	t.Helper()
	var b strings.Builder
	rc.WriteReport(&b, 5, "")
	_, under, ok := strings.Cut(b.String(), heading+"\n")
	if !ok {
		t.Fatalf("the report has no line %q:\n%s", heading, b.String())
	}
	sum, lines := 0, 0
	for _, l := range strings.Split(under, "\n") {
		if !strings.HasPrefix(l, "    ") {
			break
		}
		n, ok := count(l)
		if !ok {
			t.Fatalf("the line %q under %q holds no count", l, heading)
		}
		sum, lines = sum+n, lines+1
	}
	if lines != 4 {
		t.Errorf("%d lines under %q, want 4 (original, wrong, no usable answer, in progress):\n%s", lines, heading, b.String())
	}
	return sum
}

// count is the first number of a report's line.
func count(line string) (int, bool) {
	for _, f := range strings.Fields(line) {
		if n, err := strconv.Atoi(f); err == nil {
			return n, true
		}
	}
	return 0, false
}

// executedOps counts the operations of res that executed during the day.
func executedOps(res *replay.Result) int {
	n := 0
	for _, op := range res.Plan.Ops {
		if res.Day.Executions[op.Op] > 0 {
			n++
		}
	}
	return n
}

// TestWriteReport_WhatClientsKnowAddsUpToTheExecutedOperations: on a day
// of two transfers, one executed once whose clerk's edit was replayed its
// 201 (the edit never executed), the other never executed with its key
// left in progress (the key table read at the end of the day shows it
// so), the lines under "what each client whose operation
// executed finally knows" count the one executed operation once, and the
// edit and the stuck key have lines of their own. It catches the edit
// counted under the heading as a wrong answer (the lines would add up to
// two) and the key of an operation that never ran counted there as stuck.
func TestWriteReport_WhatClientsKnowAddsUpToTheExecutedOperations(t *testing.T) {
	plan := plainTransfers(t, 2)
	edited, died := &plan.Ops[0], &plan.Ops[1]
	edited.Fate.EditedAmount = edited.Amount + 1
	executed := labctl.State{Executions: map[string]int64{edited.Op: 1},
		Keys: []map[string]any{{"key": died.Key, "state": "in_progress"}}}
	res := &replay.Result{Plan: plan, Day: executed, Final: executed,
		Transfers: map[string]bank.Executed{"tr_1": {ID: "tr_1", Op: edited.Op, Amount: edited.Amount}},
		Attempts: []replay.Attempt{
			{Op: edited.Op, Submission: replay.SubmitOriginal, N: 1, Status: 201, Response: `{"id":"tr_1"}`, Final: true},
			{Op: edited.Op, Submission: replay.SubmitEdit, N: 1, Status: 201, Replayed: true, Response: `{"id":"tr_1"}`, Final: true},
			{Op: died.Op, Submission: replay.SubmitOriginal, N: 1, Error: "EOF"},
			{Op: died.Op, Submission: replay.SubmitOriginal, N: 2, Status: 409, Problem: problem.RequestInProgress.URI(), Final: true, GaveUp: true},
		}}
	rc := replay.ReconcileDay(res)
	c := rc.Counts
	if c.EditsAnsweredWrong != 1 || c.WrongAnswers != 1 || c.StuckNeverExecuted != 1 || c.StuckInProgress != 1 || c.OriginalAnswers != 1 {
		t.Errorf("counts %+v: one original answer, one edit answered wrong and one key stuck on an operation that never ran", c)
	}
	if got, want := knownCounts(t, rc), executedOps(res); got != want {
		t.Errorf("the lines under %q add up to %d, and %d operation executed", heading, got, want)
	}
	var b strings.Builder
	rc.WriteReport(&b, 5, "")
	for _, want := range []string{"edits told 2xx, never ran    1", "never ran, key in progress   1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report has no line %q:\n%s", want, b.String())
		}
	}
}
