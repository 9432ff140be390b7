package scoreboard

import (
	"reflect"
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
