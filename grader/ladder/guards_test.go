package ladder_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/ladder"
)

// TestCompareGuards holds the ladder's comparison of what solution N-1
// passed with the guards the catalogue declares: each kind of mismatch is
// reported, naming the check, and agreement is not.
func TestCompareGuards(t *testing.T) {
	demand := grader.Check{ID: "S2.demand", Stage: 2}
	guard := grader.Check{ID: "S2.guard", Stage: 2, Guard: "stage 1 answers every retry 409"}
	checks := []grader.Check{demand, guard}
	below := func(failed, broken []string) ladder.Cell {
		return ladder.Cell{Subject: "solutions/stage1", Stage: 2, Checks: []string{demand.ID, guard.ID},
			Failed: failed, Broken: broken, Errors: map[string]string{}}
	}
	for _, tc := range []struct {
		name   string
		below  ladder.Cell
		naming []string // the checks reported, in order
	}{
		{"the demand fails and the guard passes", below([]string{demand.ID}, nil), nil},
		{"a check passes that is no guard", below(nil, nil), []string{demand.ID}},
		{"a declared guard fails", below([]string{demand.ID, guard.ID}, nil), []string{guard.ID}},
		{"both at once", below([]string{guard.ID}, nil), []string{demand.ID, guard.ID}},
		{"a check that could not run proves nothing", below(nil, []string{demand.ID, guard.ID}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ladder.CompareGuards(checks, tc.below)
			if len(got) != len(tc.naming) {
				t.Fatalf("got %d mismatches, want %d (%v):\n%s", len(got), len(tc.naming), tc.naming, strings.Join(got, "\n"))
			}
			for i, id := range tc.naming {
				if !strings.HasPrefix(got[i], id+" ") {
					t.Errorf("mismatch %d does not name %s: %s", i, id, got[i])
				}
			}
		})
	}
}

// TestGuardsAreDeclaredForAStudent keeps each guard's reason readable:
// it names the stage before, whose passing it explains.
func TestGuardsAreDeclaredForAStudent(t *testing.T) {
	for _, c := range ladder.Guards(grader.Catalogue()) {
		if !strings.Contains(c.Guard, fmt.Sprintf("stage %d ", c.Stage-1)) {
			t.Errorf("%s's Guard does not say what stage %d does: %q", c.ID, c.Stage-1, c.Guard)
		}
	}
}

// TestPrintGuards: one line a guard, its ID and its reason.
func TestPrintGuards(t *testing.T) {
	var b bytes.Buffer
	ladder.PrintGuards(&b, []grader.Check{
		{ID: "S1.a", Guard: "stage 0 runs all"},
		{ID: "S2.longer", Guard: "stage 1 refuses all"},
	})
	want := "  S1.a       stage 0 runs all\n  S2.longer  stage 1 refuses all\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
