package grader

import (
	"strings"
	"testing"
)

// TestIndexByID_RefusesAGuardOfStageZero: a guard is a check the stage
// before passes by design, and stage 0 has none before it; a catalogue
// that declares one cannot start.
func TestIndexByID_RefusesAGuardOfStageZero(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "S0.x is a guard") {
			t.Errorf("indexByID panicked with %q, want a panic naming S0.x as a guard", r)
		}
	}()
	indexByID([]Check{{ID: "S0.x", Stage: 0, Guard: "no stage before"}})
}

// TestIndexByID_TakesAGuardOfALaterStage: a guard of stage 1 on is a
// check like any other.
func TestIndexByID_TakesAGuardOfALaterStage(t *testing.T) {
	byID := indexByID([]Check{{ID: "S1.x", Stage: 1, Guard: "stage 0 runs every request"}})
	if byID["S1.x"].Guard == "" {
		t.Errorf("indexByID lost S1.x's guard: %+v", byID)
	}
}
