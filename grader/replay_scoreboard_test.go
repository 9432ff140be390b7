package grader

import (
	"reflect"
	"strings"
	"testing"
)

// TestIndistinct_ComparesShapesNotCounts: two stages that fail in the same
// ways are one pair even if their counts differ by a race; a stage with a
// finding the next lacks is not. It catches a comparison of the exact
// counts (which would hide the 2/3 pair behind one double click's race)
// and one that ignores a column.
func TestIndistinct_ComparesShapesNotCounts(t *testing.T) {
	row := func(stage int, c DayCounts, valid bool) ScoreRow {
		return ScoreRow{Stage: stage, Counts: c, Valid: valid, BooksBalance: true}
	}
	rows := []ScoreRow{
		row(0, DayCounts{DoubleApplied: 3}, false),
		row(1, DayCounts{NoUsableAnswer: 9, EditsToldDuplicate: 2, UnexpectedStatus: 2}, false),
		row(2, DayCounts{NoUsableAnswer: 9}, false),
		row(3, DayCounts{NoUsableAnswer: 8}, false),
		row(4, DayCounts{}, true),
		row(5, DayCounts{LateReexecuted: 1}, true),
	}
	if got, want := Indistinct(rows), [][2]int{{2, 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Indistinct = %v, want %v", got, want)
	}
	var b strings.Builder
	if err := WriteScoreboard(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "stages 2 and 3 fail in the same ways") || strings.Count(b.String(), "\n| ") != len(rows)+1 {
		t.Errorf("scoreboard:\n%s", b.String())
	}
}
