package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTally_ShippedLogMatchesItsAnswerKey(t *testing.T) {
	code, out, errs := runLabCommand(t, "tally", "--log", "../../datasets/day-small.access.jsonl")
	if code != 0 || !strings.Contains(out, "matches the answer key") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestTally_SaysWhereItDiffers: a log with its last lines cut off no
// longer matches the answer key beside it, and the output says which
// counts differ.
func TestTally_SaysWhereItDiffers(t *testing.T) {
	log, err := os.ReadFile("../../datasets/day-small.access.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	answer, err := os.ReadFile("../../datasets/day-small.answer.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := strings.SplitAfter(string(log), "\n")
	os.WriteFile(filepath.Join(dir, "cut.access.jsonl"), []byte(strings.Join(lines[:len(lines)/2], "")), 0o644)
	os.WriteFile(filepath.Join(dir, "cut.answer.json"), answer, 0o644)
	code, out, _ := runLabCommand(t, "tally", "--log", filepath.Join(dir, "cut.access.jsonl"))
	if code != 1 || !strings.Contains(out, "<- differs") || !strings.Contains(out, "answer key") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestTally_StudentRunsYourTally runs stages/stage0's Tally without
// linking it into the lab command. The scaffold's Tally counts nothing
// yet, so it differs from the answer key.
func TestTally_StudentRunsYourTally(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles stages/stage0")
	}
	code, out, errs := runLabCommand(t, "tally", "--log", "../../datasets/day-small.access.jsonl", "--student", "--json")
	if code != 0 || !strings.Contains(out, `"double_transfers"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
