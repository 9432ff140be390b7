package grader_test

import (
	"context"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	sol1 "idemlab/solutions/stage1"
)

// TestEditedResubmission_ToldDuplicateNeverRan: stage 1, which knows only
// the key, answers a clerk's edited resubmission 409 duplicate-request and
// moves nothing. The money verdict is the day replay's for the same event,
// told duplicate, never ran: not lost, which says a client was told its
// money moved (a 2xx) and the books show it did not.
func TestEditedResubmission_ToldDuplicateNeverRan(t *testing.T) {
	c, _ := grader.Lookup("S2.edited-resubmission")
	r := grader.RunCheck(context.Background(), targets.Subject{Stage: 2, Name: "solutions/stage1", New: sol1.New}, c, 4242, targets.InProcess)
	if r.Harm() != judging.ToldDuplicate {
		t.Fatalf("harm %q, want %q: %v", r.Harm(), judging.ToldDuplicate, r.Err)
	}
	out := grader.Format(r, "again")
	if !strings.Contains(out, "money     ✗ told duplicate, never ran: ") || !strings.Contains(out, "the books show this request never ran") {
		t.Errorf("the failure does not name the harm and its reason:\n%s", out)
	}
}
