package grader_test

import (
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions/stage7"
)

// TestReferenceWriteFails_AServerThatHoldsNoReferenceIsNotToldItDropsAnError:
// stage 8's scaffold, like solution 7, holds no reference, so the
// fail-reference-write fault finds no insert to refuse, and the invoice
// is paid again under a new key. S8.reference-write-fails must still fail
// it for the double (the ladder needs the stage-8 checks to fail solution
// 7 with evidence), but its story must say that the fault did not fire,
// and its why must not send the student after an insert's error dropped,
// an error no statement of the server ever had.
func TestReferenceWriteFails_AServerThatHoldsNoReferenceIsNotToldItDropsAnError(t *testing.T) {
	f := failureOf(t, "S8.reference-write-fails", grader.Subject{Stage: 8, Name: "solutions/stage7", New: stage7.New})
	if f.Harm != judging.Double {
		t.Errorf("harm %q, want %q", f.Harm, judging.Double)
	}
	if !strings.Contains(f.Sent, "it did not fire") {
		t.Errorf("the story does not say the fault did not fire:\n%s", f.Sent)
	}
	if c, _ := grader.Lookup("S8.reference-write-fails"); f.Why == "" || f.Why == c.Why {
		t.Errorf("the why is the check's own, about an insert's error dropped: %q", c.Why)
	}
}
