package grader

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"idemlab/grader/judging"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
)

// A lab that says the stage's Purge failed (after a move of the clock, or
// asked for) fails the check and points at lesson 05's purging: the fault
// is the server's. Before, a purge that never ended made every check that
// moved the clock "could not run", and the student's loop gave no hint.
// Any other error of the lab is still the check's own (could not run).
func TestPurgeFailure_IsTheServersFault(t *testing.T) {
	failed := &labclient.Error{Method: http.MethodPost, Path: "/lab/clock", Status: 500,
		Body: `{"type":"/problems/internal","detail":"` + labctl.PurgeFailed + `: it did not return within 10s"}`}
	err := newT().purgeFailure(`POST /lab/clock {"advance":"1h"}`, fmt.Errorf("move the clock: %w", failed))
	var f *judging.Failure
	if !errors.As(err, &f) {
		t.Fatalf("%v, want a failure of the check", err)
	}
	if f.Lesson != lesson5+"#purging" || !strings.Contains(f.Got, "did not return within 10s") {
		t.Errorf("lesson %q, got %q: want lesson 05's purging and the lab's answer", f.Lesson, f.Got)
	}
	other := &labclient.Error{Method: http.MethodPost, Path: "/lab/clock", Status: 401, Body: `{"type":"/problems/unauthorized"}`}
	if err := newT().purgeFailure("POST /lab/clock", other); !errors.Is(err, other) || errors.As(err, &f) {
		t.Errorf("another error of the lab: %v, want it as it is", err)
	}
	if err := newT().purgeFailure("POST /lab/clock", nil); err != nil {
		t.Errorf("no error: %v", err)
	}
}
