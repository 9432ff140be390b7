package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestScoreboard_EachStageShowsItsFailure: on the default day's shape, each
// stage below the last fails in its own way and the last is clean. It
// catches a reconciliation that stops seeing one of the failures (stage 1
// and 2 would merge if edits told duplicate-request went uncounted, 3 and
// 4 if a client told 409 duplicate-request counted as knowing its answer,
// 4 and 5 if a refusal for another customer's key did, 5 and 6 if a key
// left in progress by a crash went uncounted, 6 and 7 if a settings edit
// answered 404 did, 7 and 8 if invoices were counted per key instead of
// per reference, 8 and 9 if the core ledger went unread).
func TestScoreboard_EachStageShowsItsFailure(t *testing.T) {
	code, out, errs := runLabCommand(t, "scoreboard", "--ops", "300", "--crash-rate", "0.03",
		"--repay-rate", "0.03", "--settings-edit-rate", "0.02", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var board struct {
		Plan string `json:"plan"`
		Rows []struct {
			Stage  int            `json:"stage"`
			Valid  bool           `json:"valid"`
			Counts map[string]int `json:"counts"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &board); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(board.Plan, "--shared-key-rate 0.01 --crash-rate 0.03 --invoice-rate 0.1 --repay-rate 0.03 --settings-edit-rate 0.02") ||
		len(board.Rows) != scoreboardLast+1 {
		t.Fatalf("plan %q, %d rows", board.Plan, len(board.Rows))
	}
	// The finding each stage is the first to show, and that the next
	// stage fixes.
	fixed := map[int]string{0: "double_applied", 1: "edits_told_duplicate", 3: "no_usable_answer", 4: "refused_for_others_key", 5: "stuck_in_progress",
		6: "edits_not_served", 7: "invoices_paid_twice", 8: "not_posted"}
	for stage, count := range fixed {
		if board.Rows[stage].Counts[count] == 0 || board.Rows[stage+1].Counts[count] != 0 {
			t.Errorf("%s: stage %d has %d, stage %d has %d; want some, then none", count,
				stage, board.Rows[stage].Counts[count], stage+1, board.Rows[stage+1].Counts[count])
		}
	}
	for _, r := range board.Rows {
		if r.Valid != (r.Stage == scoreboardLast) {
			t.Errorf("stage %d: valid %v", r.Stage, r.Valid)
		}
	}
}
