package grader_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
	"idemlab/solutions/stage7"
	"idemlab/solutions/stage8"
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

// failingTransfers is stage 8's solution whose every transfer fails
// before it reaches the database: it holds no reference, and moves
// nothing.
type failingTransfers struct{ stage.Handlers }

func (failingTransfers) Transfer(w http.ResponseWriter, r *http.Request) {
	problem.Write(w, errors.New("the transfer fails"))
}

// TestReferenceWriteFails_APaymentThatFailsOfSomethingElseIsNotToldItsReferenceWasRefused:
// a server whose payments fail before any reference is inserted leaves
// the fail-reference-write fault armed, and its retry fails too. The
// check fails it, and its expectation says that the fault refused
// nothing, not that the attempt's reference was refused: no statement
// was.
func TestReferenceWriteFails_APaymentThatFailsOfSomethingElseIsNotToldItsReferenceWasRefused(t *testing.T) {
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage8.New(ctx, env)
		return failingTransfers{h}, err
	}
	f := failureOf(t, "S8.reference-write-fails", grader.Subject{Stage: 8, Name: "failing transfers", New: factory})
	if !strings.Contains(f.Sent, "it did not fire") {
		t.Errorf("the story does not say the fault did not fire:\n%s", f.Sent)
	}
	if strings.Contains(f.Expected, "reference was refused") || !strings.Contains(f.Expected, "refused nothing") {
		t.Errorf("the expectation is not about a fault that refused nothing: %q", f.Expected)
	}
}
