package server

import (
	"testing"
	"time"
)

// TestHeardCommits_ARowReadAfterALaterCommitIsPlacedThere: a claim's
// report read once the completion has committed reads the completed row,
// which must be placed at the completion's commit, not the claim's; and a
// row is forgotten once its last commit's report has been read.
func TestHeardCommits_ARowReadAfterALaterCommitIsPlacedThere(t *testing.T) {
	var h heardCommits
	claim := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	completion := claim.Add(300 * time.Millisecond)
	h.note([]int64{7}, claim)
	h.note([]int64{7, 8}, completion)
	if got := h.of(7, claim); !got.Equal(completion) {
		t.Errorf("the claim's report, read after the completion: at = %v, want the completion's %v", got, completion)
	}
	if got := h.of(7, completion); !got.Equal(completion) {
		t.Errorf("the completion's report: at = %v, want %v", got, completion)
	}
	if got := h.of(8, completion); !got.Equal(completion) {
		t.Errorf("row 8's report: at = %v, want %v", got, completion)
	}
	if len(h.last) != 0 {
		t.Errorf("rows kept after their last reports were read: %v", h.last)
	}
	// A report of a row nobody noted (the stream had no listener then)
	// keeps its own time.
	if got := h.of(9, claim); !got.Equal(claim) {
		t.Errorf("a row never noted: at = %v, want its report's %v", got, claim)
	}
}
