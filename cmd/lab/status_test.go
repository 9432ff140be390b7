package main

import (
	"strings"
	"testing"

	"idemlab/kit/labdb"
	"idemlab/studentloop"
)

// TestStatus_NothingRunYet: every stage not started, and the next step is
// stage 0's lesson.
func TestStatus_NothingRunYet(t *testing.T) {
	fakeLoop(t, passingS1, "")
	code, out, _ := runLabCommand(t, "status")
	if code != 0 || strings.Count(out, "not started") != studentloop.Stages || !strings.Contains(out, "next: stage 0 (docs/lessons/00-naive.md)") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestStatus_MovesOn: once stage 0 passes, the next step is stage 1.
func TestStatus_MovesOn(t *testing.T) {
	fakeLoop(t, passingS1, "")
	runLabCommand(t, "check", "0")
	_, out, _ := runLabCommand(t, "status")
	if !strings.Contains(out, "✓ 0    passing") || !strings.Contains(out, "next: stage 1") {
		t.Fatalf("status:\n%s", out)
	}
}

// TestStatus_SaysTheEngine: the status names the engine each stage last
// ran on, and a pass counts a later stage as passing already only when it
// passed on the same engine: a stage that passes on SQLite may not on
// PostgreSQL, where writers race.
func TestStatus_SaysTheEngine(t *testing.T) {
	onPostgres := passingS1
	onPostgres.Engine = labdb.PostgreSQL
	fakeLoop(t, onPostgres, "")
	runLabCommand(t, "check", "2")
	onSQLite := passingS1
	onSQLite.Engine = labdb.SQLite
	newRunner = func(string, string, string, bool) studentloop.Runner { return fixedRunner{onSQLite} }
	_, check, _ := runLabCommand(t, "check", "1")
	if strings.Contains(check, "passes already") || !strings.Contains(check, "next: stage 2") {
		t.Errorf("stage 2 passed on PostgreSQL only, stage 1 on SQLite:\n%s", check)
	}
	_, out, _ := runLabCommand(t, "status")
	for _, want := range []string{"✓ 1    passing         2/2     SQLite", "✓ 2    passing         2/2     PostgreSQL"} {
		if !strings.Contains(out, want) {
			t.Errorf("status has no line %q:\n%s", want, out)
		}
	}
	runLabCommand(t, "check", "2")
	if _, check, _ = runLabCommand(t, "check", "1"); !strings.Contains(check, "stage 2 passes already") {
		t.Errorf("stage 2 passed on SQLite too:\n%s", check)
	}
}
