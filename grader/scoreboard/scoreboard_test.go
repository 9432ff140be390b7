package scoreboard

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"idemlab/grader/replay"
)

// TestIndistinct_ComparesShapesNotCounts: two stages that fail in the same
// ways are one pair even if their counts differ by a race; a stage with a
// finding the next lacks is not. It catches a comparison of the exact
// counts (which would hide the 2/3 pair behind one double click's race)
// and one that ignores a column.
func TestIndistinct_ComparesShapesNotCounts(t *testing.T) {
	row := func(stage int, c replay.DayCounts, valid bool) Row {
		return Row{Stage: stage, Counts: c, Valid: valid, BooksBalance: true}
	}
	rows := []Row{
		row(0, replay.DayCounts{DoubleApplied: 3}, false),
		row(1, replay.DayCounts{NoUsableAnswer: 9, ToldDuplicate: 2, EditsToldDuplicate: 2}, false),
		row(2, replay.DayCounts{NoUsableAnswer: 9}, false),
		row(3, replay.DayCounts{NoUsableAnswer: 8}, false),
		row(4, replay.DayCounts{}, true),
		row(5, replay.DayCounts{LateReexecuted: 1}, true),
	}
	if got, want := Indistinct(rows), [][2]int{{2, 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Indistinct = %v, want %v", got, want)
	}
	var b strings.Builder
	if err := Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "stages 2 and 3 fail in the same ways") || strings.Count(b.String(), "\n| ") != len(rows)+1 {
		t.Errorf("scoreboard:\n%s", b.String())
	}
}

// TestWrite_KeyNotObservedHasItsColumn: a day whose clients were told to
// wait for good by a server whose key table the lab cannot read counts
// them in key_unobserved (judged no usable answer); the scoreboard shows
// the count in a column of its own, and a stage that has some is not of
// the same shape as one that has none. Before, the column was missing
// and the two stages read alike.
func TestWrite_KeyNotObservedHasItsColumn(t *testing.T) {
	rows := []Row{
		{Stage: 3, Counts: replay.DayCounts{KeyUnobserved: 7}, BooksBalance: true},
		{Stage: 4, BooksBalance: true},
	}
	if got := Indistinct(rows); len(got) != 0 {
		t.Errorf("Indistinct = %v, want none: only one stage has clients whose key was not observed", got)
	}
	var b strings.Builder
	if err := Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	heads := strings.Split(lines[0], "|")
	cells := strings.Split(lines[2], "|")
	i := slices.IndexFunc(heads, func(h string) bool { return strings.TrimSpace(h) == "key not observed" })
	if i < 0 || strings.TrimSpace(cells[i]) != "7" {
		t.Errorf("no key not observed column holding 7:\n%s", b.String())
	}
}
