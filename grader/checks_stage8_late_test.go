package grader_test

import (
	"context"
	"errors"
	"net/http"
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
	c, ok := grader.Lookup("S8.reference-write-fails")
	if !ok {
		t.Fatal("no check S8.reference-write-fails")
	}
	subject := grader.Subject{Stage: 8, Name: "solutions/stage7", New: stage7.New}
	r := grader.RunCheck(context.Background(), subject, c, 1, serveWrapped(t, stage7.New, func(h http.Handler) http.Handler { return h }))
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		t.Fatalf("a server that holds no reference: %v; want a failure with evidence", r.Err)
	}
	if f.Harm != judging.Double {
		t.Errorf("harm %q, want %q", f.Harm, judging.Double)
	}
	if !strings.Contains(f.Sent, "it did not fire") {
		t.Errorf("the story does not say the fault did not fire:\n%s", f.Sent)
	}
	if f.Why == "" || f.Why == c.Why {
		t.Errorf("the why is the check's own, about an insert's error dropped: %q", c.Why)
	}
}
